// What workflow histories say, for operators: a lease's phase changes (its LeasePhase upserts,
// with event times) and a node's address allocations and releases (its update events), read
// across every run of the node (continue-as-new).
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter, tsToMs } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { AddressGrant, Allocation } from '../domain/allocation';
import { nodeWorkflowId } from '../domain/ids';
import type { PoolSpec } from '../domain/pool-spec';
import type { NodeOperation, OperationOutcome } from '../workflows/node-messages';
import type { PoolInput } from '../workflows/pool-messages';
import { queryString } from './visibility';
import { unlessGone } from './workflow-gone';

type Payload = temporal.api.common.v1.IPayload;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const decode = (payload: Payload | null | undefined): unknown =>
  payload ? defaultPayloadConverter.fromPayload(payload) : undefined;

const timeOf = (event: HistoryEvent): Date => new Date(tsToMs(event.eventTime));

export interface PhaseChange {
  phase: string;
  at: Date;
  addresses: string[];
}

/** The phases a lease run went through: its start's LeasePhase, then every upsert. */
export async function leasePhaseHistory(
  client: Client,
  workflowId: string,
  runId?: string,
): Promise<PhaseChange[]> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  const changes: PhaseChange[] = [];
  let addresses: string[] = [];
  for (const event of history.events ?? []) {
    const fields =
      event.workflowExecutionStartedEventAttributes?.searchAttributes?.indexedFields ??
      event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
    if (!fields) continue;
    const ips = decode(fields.IPAddresses);
    if (Array.isArray(ips)) addresses = ips.map(String);
    const phase = decode(fields.LeasePhase);
    if (typeof phase === 'string') changes.push({ phase, at: timeOf(event), addresses });
  }
  return changes;
}

/** One address event in a node's history: allocated to, released by, or loaded for an owner. */
export interface AddressEvent {
  kind: 'allocate' | 'release' | 'loadAllocation';
  address: string;
  owner: string;
  at: Date;
  runId: string;
}

interface Accepted {
  name: string;
  arg: unknown;
}

/** What a completed update did to addresses: one entry per allocation or release it answered. */
interface Applied {
  kind: 'allocate' | 'release';
  owner: string;
  grants: AddressGrant[];
}

function appliedBy({ name, arg }: Accepted, result: unknown): Applied[] {
  // Node runs from before batches answered one `allocate` or `release` per update.
  if (name === 'allocate' || name === 'release')
    return Array.isArray(result)
      ? [{ kind: name, owner: ownerOf(name, arg), grants: result as AddressGrant[] }]
      : [];
  if (name !== 'batch' || !Array.isArray(arg) || !Array.isArray(result)) return [];
  // A batch carries many leases' operations; each is answered under its own id.
  const operations = arg as NodeOperation[];
  return (result as OperationOutcome[]).flatMap((outcome) => {
    const operation = operations.find((o) => o.id === outcome.id);
    if (!operation || !('grants' in outcome)) return [];
    return [{ kind: operation.kind, owner: operation.request.owner, grants: outcome.grants }];
  });
}

function ownerOf(name: string, arg: unknown): string {
  if (typeof arg !== 'object' || arg === null) return '';
  if (name === 'loadAllocation') return String((arg as { allocation?: Allocation }).allocation?.owner ?? '');
  return String((arg as { owner?: unknown }).owner ?? '');
}

/** The address events of one node run, in history order. */
function addressEventsOfRun(events: HistoryEvent[], runId: string): AddressEvent[] {
  const accepted = new Map<string, Accepted>();
  const found: AddressEvent[] = [];
  for (const event of events) {
    const acceptance = event.workflowExecutionUpdateAcceptedEventAttributes;
    if (acceptance) {
      const input = acceptance.acceptedRequest?.input;
      const name = input?.name ?? '';
      const arg = decode(input?.args?.payloads?.[0]);
      accepted.set(String(event.eventId), { name, arg });
      if (name === 'loadAllocation') {
        const address = (arg as { allocation?: Allocation }).allocation?.address;
        if (address)
          found.push({
            kind: 'loadAllocation',
            address,
            owner: ownerOf(name, arg),
            at: timeOf(event),
            runId,
          });
      }
      continue;
    }
    const completion = event.workflowExecutionUpdateCompletedEventAttributes;
    if (!completion) continue;
    const request = accepted.get(String(completion.acceptedEventId));
    if (!request) continue;
    for (const applied of appliedBy(request, decode(completion.outcome?.success?.payloads?.[0]))) {
      for (const grant of applied.grants)
        found.push({
          kind: applied.kind,
          address: grant.address,
          owner: applied.owner,
          at: timeOf(event),
          runId,
        });
    }
  }
  return found;
}

/** Runs of one workflow followed back along continue-as-new: far more than a node ever makes. */
const MAX_RUNS = 100_000;

/**
 * Every run of `workflowId` with its history, oldest first: the current run and, back along
 * continue-as-new, the runs before it (each run's first event names the one before it; visibility
 * lags and may not list the newest yet), and any earlier runs of the id only visibility knows.
 */
async function runHistories(client: Client, workflowId: string) {
  const histories = new Map<string, HistoryEvent[]>();
  const fetchRun = async (runId: string) =>
    (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
  const current = await unlessGone(() => client.workflow.getHandle(workflowId).describe(), undefined);
  let runId = current?.runId;
  for (let n = 0; runId && !histories.has(runId) && n < MAX_RUNS; n++) {
    const events = await unlessGone(() => fetchRun(runId as string), undefined);
    if (!events) break; // past the namespace's retention
    histories.set(runId, events);
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  for await (const run of client.workflow.list({ query: `WorkflowId = ${queryString(workflowId)}` }))
    if (!histories.has(run.runId)) histories.set(run.runId, await fetchRun(run.runId));
  const startOf = (events: HistoryEvent[]) => (events[0] ? timeOf(events[0]).getTime() : 0);
  return [...histories].sort(([, a], [, b]) => startOf(a) - startOf(b));
}

/** Every address event of node/<nodeName>, over all its runs (oldest first). */
export async function nodeAddressEvents(client: Client, nodeName: string): Promise<AddressEvent[]> {
  const events: AddressEvent[] = [];
  for (const [runId, history] of await runHistories(client, nodeWorkflowId(nodeName)))
    events.push(...addressEventsOfRun(history, runId));
  return events;
}

/** The sandboxes (container ids) the ADDs of a lease named, over all its runs, first seen first. */
export async function leaseSandboxes(client: Client, leaseId: string): Promise<string[]> {
  const sandboxes: string[] = [];
  for (const [, history] of await runHistories(client, leaseId))
    for (const event of history) {
      const input = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
      if (input?.name !== 'consume' && input?.name !== 'confirmAnswer') continue;
      const containerId = (decode(input.args?.payloads?.[0]) as { containerId?: unknown } | undefined)
        ?.containerId;
      if (typeof containerId === 'string' && !sandboxes.includes(containerId)) sandboxes.push(containerId);
    }
  return sandboxes;
}

/**
 * How long the namespace keeps a closed run's history (its retention): the horizon of what
 * histories can say. Undefined when the server does not say.
 */
export async function historyRetentionMs(client: Client, namespace: string): Promise<number | undefined> {
  const { config } = await client.workflowService.describeNamespace({ namespace });
  const ttl = config?.workflowExecutionRetentionTtl;
  return ttl ? tsToMs(ttl) : undefined;
}

/**
 * The spec a closed pool run served last: its start's (carried state, else input), then each
 * `configure` update it accepted and completed. Undefined when its history is gone.
 */
export async function servedPoolSpec(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<PoolSpec | undefined> {
  const events = await unlessGone(
    async () => (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [],
    undefined,
  );
  if (!events) return undefined;
  const input = decode(events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]) as
    PoolInput | undefined;
  let served = input?.state?.spec ?? input?.spec;
  const configures = new Map<string, PoolSpec>();
  for (const event of events) {
    const accepted = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
    if (accepted?.name === 'configure') {
      const arg = decode(accepted.args?.payloads?.[0]) as { spec?: PoolSpec } | undefined;
      if (arg?.spec) configures.set(String(event.eventId), arg.spec);
    }
    const completed = event.workflowExecutionUpdateCompletedEventAttributes;
    const spec = completed && configures.get(String(completed.acceptedEventId));
    if (spec && completed.outcome?.success) served = spec;
  }
  return served;
}
