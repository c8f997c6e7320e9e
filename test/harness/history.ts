// What a lease workflow's history and pending activities say, for asserting retries and
// "produced exactly once" from Temporal's own record.
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';

/** How many times an activity of this type was scheduled (retries of one schedule count once). */
export async function scheduledCount(
  client: Client,
  workflowId: string,
  activityType: string,
): Promise<number> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).filter(
    (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === activityType,
  ).length;
}

/** The names of the updates a workflow accepted, in order. */
export async function acceptedUpdates(client: Client, workflowId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? [])
    .map((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name)
    .filter((name): name is string => typeof name === 'string');
}

export interface PendingAttempt {
  attempt: number;
  lastFailure: string;
}

/** The attempt number and last failure of a pending activity of this type, if one is pending. */
export async function pendingAttempt(
  client: Client,
  workflowId: string,
  activityType: string,
): Promise<PendingAttempt | undefined> {
  const description = await client.workflow.getHandle(workflowId).describe();
  const pending = (description.raw.pendingActivities ?? []).find(
    (a) => a.activityType?.name === activityType,
  );
  if (!pending) return undefined;
  return { attempt: pending.attempt ?? 0, lastFailure: pending.lastFailure?.message ?? '' };
}

/** The one-line "current details" the UI shows for a workflow. */
export async function currentDetails(client: Client, workflowId: string): Promise<string> {
  const metadata = await client.workflow
    .getHandle(workflowId)
    .query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  return metadata.currentDetails ?? '';
}

/** The attempt number an activity of this type finished on (history records only the last start). */
export async function finishedAttempt(
  client: Client,
  workflowId: string,
  activityType: string,
): Promise<number | undefined> {
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const scheduled = new Map<string, string>();
  let attempt: number | undefined;
  for (const e of events) {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (name) scheduled.set(String(e.eventId), name);
    const started = e.activityTaskStartedEventAttributes;
    if (started && scheduled.get(String(started.scheduledEventId)) === activityType) {
      attempt = started.attempt ?? undefined;
    }
  }
  return attempt;
}

/** The first argument of each update of this name the run accepted, decoded. */
export async function acceptedArguments(
  client: Client,
  workflowId: string,
  update: string,
  runId?: string,
): Promise<unknown[]> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  return (history.events ?? [])
    .map((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input)
    .filter((input) => input?.name === update)
    .map((input) => {
      const [first] = input?.args?.payloads ?? [];
      return first ? defaultPayloadConverter.fromPayload(first as Payload) : undefined;
    });
}

/** The ids of the patches (`patched()`) the run marked in its history. */
export async function patchesOf(client: Client, workflowId: string, runId?: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  return (history.events ?? [])
    .map((e) => e.markerRecordedEventAttributes)
    .filter((marker) => marker?.markerName === 'core_patch')
    .flatMap((marker) => marker?.details?.['patch-data']?.payloads ?? [])
    .map((payload) => (defaultPayloadConverter.fromPayload(payload as Payload) as { id?: string })?.id)
    .filter((id): id is string => typeof id === 'string');
}
