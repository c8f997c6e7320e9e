// Which worker ran a workflow's tasks, read from its history: the identity on each completed
// workflow task, and how long a workflow waited for another worker after its own was killed.
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const completedBy = (e: HistoryEvent) => e.workflowTaskCompletedEventAttributes?.identity ?? undefined;
const startedBy = (e: HistoryEvent) => e.workflowTaskStartedEventAttributes?.identity ?? undefined;
const timeOf = (e: HistoryEvent): number => tsToMs(e.eventTime);

/** Workflow tasks completed, by worker identity. */
export function tasksByWorker(history: History): Map<string, number> {
  const counts = new Map<string, number>();
  for (const e of history.events ?? []) {
    const identity = completedBy(e);
    if (identity) counts.set(identity, (counts.get(identity) ?? 0) + 1);
  }
  return counts;
}

/** The worker that completed its last workflow task before `at` (ms): its sticky queue's then. */
export function workerAt(history: History, at: number): string | undefined {
  const before = (history.events ?? []).filter((e) => timeOf(e) < at);
  return before
    .map(completedBy)
    .filter((id) => id !== undefined)
    .at(-1);
}

export interface Handover {
  /** From the kill (or the first task the killed worker did not complete, if later) to the survivor's start of it. */
  waitedMs: number;
  /** Workflow tasks that timed out meanwhile (schedule-to-start on the sticky queue, start-to-close). */
  timeouts: string[];
  /** Workflow tasks the survivor completed after the kill. */
  completed: number;
}

/**
 * How a workflow whose sticky worker `killed` died at `killedAt` (ms) came to `survivor`: undefined
 * if no workflow task was scheduled after `killed`'s last one (nothing to hand over).
 */
export function handover(
  history: History,
  killed: string,
  survivor: string,
  killedAt: number,
): Handover | undefined {
  const events = history.events ?? [];
  const lastByKilled = events.map(completedBy).lastIndexOf(killed);
  const after = events.slice(lastByKilled + 1);
  const pending = after.find((e) => e.workflowTaskScheduledEventAttributes);
  const served = after.find((e) => startedBy(e) === survivor);
  if (!pending || !served) return undefined;
  const timeouts = after
    .filter((e) => timeOf(e) <= timeOf(served))
    .map((e) => e.workflowTaskTimedOutEventAttributes?.timeoutType)
    .filter((t) => t !== undefined && t !== null)
    .map((t) => temporal.api.enums.v1.TimeoutType[t] ?? String(t));
  const completed = after.filter((e) => completedBy(e) === survivor && timeOf(e) >= killedAt).length;
  return { waitedMs: timeOf(served) - Math.max(killedAt, timeOf(pending)), timeouts, completed };
}

export async function historyOf(client: Client, workflowId: string): Promise<History> {
  return client.workflow.getHandle(workflowId).fetchHistory();
}

/**
 * Timeouts a history records, by kind: workflow tasks by timeout type, and activities retried (an
 * attempt that timed out and was retried leaves no event of its own: the started attempt > 1 and
 * its last failure say it).
 */
export function timeoutsIn(history: History): Map<string, number> {
  const counts = new Map<string, number>();
  const scheduled = new Map<string, string>();
  const count = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  const typeName = (t: number | null | undefined) => temporal.api.enums.v1.TimeoutType[t ?? 0] ?? String(t);
  for (const e of history.events ?? []) {
    const activity = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (activity) scheduled.set(String(e.eventId), activity);
    const task = e.workflowTaskTimedOutEventAttributes;
    if (task) count(`workflow task ${typeName(task.timeoutType)}`);
    const started = e.activityTaskStartedEventAttributes;
    if (started && (started.attempt ?? 1) > 1) {
      const name = scheduled.get(String(started.scheduledEventId)) ?? 'activity';
      const timeout = started.lastFailure?.timeoutFailureInfo?.timeoutType;
      count(
        `${name} retried after ${timeout ? typeName(timeout) : (started.lastFailure?.message ?? 'a failure')}`,
      );
    }
  }
  return counts;
}

/**
 * Workflow tasks scheduled on the normal queue after the first (any worker may take them, and one
 * without the workflow cached replays its whole history), and how often the completing worker
 * changed from one task to the next.
 */
export function stickiness(history: History): { normalAfterFirst: number; switches: number } {
  const events = history.events ?? [];
  const normal = events.filter(
    (e) =>
      e.workflowTaskScheduledEventAttributes?.taskQueue?.kind ===
      temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL,
  ).length;
  const workers = events.map(completedBy).filter((id) => id !== undefined);
  const switches = workers.filter((id, i) => i > 0 && id !== workers[i - 1]).length;
  return { normalAfterFirst: Math.max(normal - 1, 0), switches };
}

/** Signals a history received, by `<signal> from <sender identity>`. */
export function signalsIn(history: History): Map<string, number> {
  const counts = new Map<string, number>();
  for (const e of history.events ?? []) {
    const signal = e.workflowExecutionSignaledEventAttributes;
    if (!signal) continue;
    const key = `${signal.signalName ?? '?'} from ${signal.identity ?? '?'}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}
