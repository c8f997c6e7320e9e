// What a closed lease run held, read from its history without running it. A run whose history the
// worker cannot replay (the SDK's update-order nondeterminism, docs/testing.md "The soak") cannot
// answer a query either, open or closed; its start and its sandboxes are in its events all the same:
// the start input, and the consume, confirmAnswer and deactivate updates it accepted.
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter, type PayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import {
  ActivatedLinksSchema,
  ConsumeSchema,
  DeactivateSchema,
  FailureType,
  LeaseStartSchema,
  SandboxSchema,
  type Attachment,
  type LeaseStart,
} from '../domain/lease';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Payload = temporal.api.common.v1.IPayload;
export type HeldAttachment = Omit<Attachment, 'status'>;

/** A lease run's start (its terms as its last ADD set them) and the sandboxes it held. */
export interface HeldByRun {
  start: LeaseStart;
  attachments: HeldAttachment[];
}

interface Accepted {
  name: string;
  request: unknown;
}

/** The closed run's history, read and folded; undefined when it is not a lease's. */
export async function leaseRunFromHistory(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<HeldByRun | undefined> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  return heldInHistory(history.events ?? []);
}

/**
 * Folds a lease run's events: an accepted ADD (consume, or the agent's confirmAnswer) claims its
 * sandbox unless refused (another reason than a failed activation, which leaves it parked), a
 * deactivate that answered true removes it. Input that does not parse is skipped.
 */
export function heldInHistory(
  events: HistoryEvent[],
  converter: PayloadConverter = defaultPayloadConverter,
): HeldByRun | undefined {
  const decode = (payload: Payload | undefined): unknown =>
    payload ? converter.fromPayload(payload) : undefined;
  const input = events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
  const started = LeaseStartSchema.safeParse(decode(input[0]));
  if (!started.success) return undefined;
  const held: HeldByRun = { start: started.data, attachments: recoveredAttachments(decode(input[1])) };
  const accepted = new Map<string, Accepted>();
  for (const event of events) {
    const acceptance = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
    if (acceptance?.name)
      accepted.set(String(event.eventId), {
        name: acceptance.name,
        request: decode(acceptance.args?.payloads?.[0]),
      });
    const completion = event.workflowExecutionUpdateCompletedEventAttributes;
    const update = completion && accepted.get(String(completion.acceptedEventId));
    if (!completion?.outcome || !update) continue;
    const { success, failure } = completion.outcome;
    if (success) apply(held, update, decode(success.payloads?.[0]));
    else if (failure?.applicationFailureInfo?.type === FailureType.activationFailed)
      apply(held, update, undefined);
  }
  return held;
}

/** One completed update's effect on what the run holds. */
function apply(held: HeldByRun, update: Accepted, result: unknown): void {
  if (update.name === 'deactivate') {
    const request = DeactivateSchema.safeParse(update.request);
    if (request.success && result === true)
      held.attachments = held.attachments.filter((a) => !same(a, request.data));
    return;
  }
  if (update.name !== 'consume' && update.name !== 'confirmAnswer') return;
  const sandbox = SandboxSchema.safeParse(update.request);
  if (!sandbox.success) return;
  // A claimed ADD's terms are the lease's (a guess that gave way took them).
  const terms = update.name === 'consume' ? ConsumeSchema.safeParse(update.request).data?.terms : undefined;
  if (terms) held.start = { ...held.start, ...terms };
  const links = linksOf(result) ?? linksOf(update.request);
  const { containerId, netns, ifName, routes } = sandbox.data;
  const attachment: HeldAttachment = { containerId, netns, ifName, ...(routes ? { routes } : {}) };
  if (links) attachment.links = links;
  held.attachments = [...held.attachments.filter((a) => !same(a, attachment)), attachment];
}

/** The sandboxes a recovered run was started with (its second argument). */
function recoveredAttachments(recovered: unknown): HeldAttachment[] {
  const list = (recovered as { attachments?: unknown } | undefined)?.attachments;
  if (!Array.isArray(list)) return [];
  return list.flatMap((item: unknown) => {
    const sandbox = SandboxSchema.safeParse(item);
    if (!sandbox.success) return [];
    const links = linksOf(item);
    return [{ ...sandbox.data, ...(links ? { links } : {}) }];
  });
}

const linksOf = (value: unknown) => {
  const parsed = ActivatedLinksSchema.safeParse((value as { links?: unknown } | undefined)?.links);
  return parsed.success ? parsed.data : undefined;
};

const same = (a: { containerId: string; ifName: string }, b: { containerId: string; ifName: string }) =>
  a.containerId === b.containerId && a.ifName === b.ifName;
