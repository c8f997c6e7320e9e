// What a lease workflow's history and pending activities say, for asserting retries and
// "produced exactly once" from Temporal's own record.
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const { EventType } = temporal.api.enums.v1;

/** An event's type without its prefix: `WORKFLOW_TASK_COMPLETED`. */
export const eventName = (event: HistoryEvent): string =>
  String(EventType[event.eventType ?? 0]).replace('EVENT_TYPE_', '');

/** Events a workflow task's commands write (those a lease can issue). */
export const COMMAND_EVENTS = new Set([
  'MARKER_RECORDED',
  'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES',
  'ACTIVITY_TASK_SCHEDULED',
  'ACTIVITY_TASK_CANCEL_REQUESTED',
  'TIMER_STARTED',
  'TIMER_CANCELED',
  'WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
  'WORKFLOW_EXECUTION_UPDATE_COMPLETED',
  'WORKFLOW_EXECUTION_COMPLETED',
]);

/**
 * The activity type of a local activity's marker (core writes it in the marker's `data`); none for
 * one that failed (the lease goes on with the same call as an ordinary activity).
 */
function localActivityType(event: HistoryEvent): string | undefined {
  const marker = event.markerRecordedEventAttributes;
  if (marker?.markerName !== 'core_local_activity' || marker.failure) return undefined;
  const data = marker.details?.data?.payloads?.[0];
  return data
    ? (defaultPayloadConverter.fromPayload(data as Payload) as { activity_type?: string }).activity_type
    : undefined;
}

/**
 * How many times an activity of this type was called: scheduled, or run as a local activity that
 * completed (retries of one call count once; a local one that failed went on as a scheduled one).
 */
export async function scheduledCount(
  client: Client,
  workflowId: string,
  activityType: string,
): Promise<number> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).filter(
    (e) =>
      e.activityTaskScheduledEventAttributes?.activityType?.name === activityType ||
      localActivityType(e) === activityType,
  ).length;
}

/** How many times an activity ran as a local activity (its markers: one per call, retries within). */
export async function localActivityCount(client: Client, workflowId: string): Promise<number> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).filter(
    (e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
  ).length;
}

/** The workflow tasks completed before the first update of this name was accepted (1: by the first task). */
export async function tasksUntilUpdateAccepted(
  client: Client,
  workflowId: string,
  updateName: string,
): Promise<number> {
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const accepted = events.findIndex(
    (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === updateName,
  );
  if (accepted < 0) throw new Error(`${workflowId}: no ${updateName} update accepted`);
  return events.slice(0, accepted).filter((e) => e.workflowTaskCompletedEventAttributes).length;
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
