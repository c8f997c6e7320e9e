// What a lifecycle costs Temporal, read back from the histories: per lease, its workflow tasks,
// events, activities (and local activities), signals, updates, timers and search-attribute upserts;
// and the node workflow's tasks over the row's window, shared by its leases.
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

type Event = temporal.api.history.v1.IHistoryEvent;
const { EventType } = temporal.api.enums.v1;

/** Sums over `leases` lease histories and the node's tasks over `lifecycles` lifecycles. */
export interface WorkflowWork {
  leases: number;
  leaseTasks: number;
  events: number;
  activities: Record<string, number>;
  localActivities: number;
  signals: Record<string, number>;
  updates: Record<string, number>;
  timers: number;
  upserts: number;
  lifecycles: number;
  nodeTasks: number;
}

const typeOf = (e: Event): string => String(EventType[e.eventType ?? 0]).replace('EVENT_TYPE_', '');
const msOf = (t: Event['eventTime']): number =>
  Number(t?.seconds?.toString() ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;
const bump = (into: Record<string, number>, key: string, by = 1) => (into[key] = (into[key] ?? 0) + by);

export const noWork = (): WorkflowWork => ({
  leases: 0,
  leaseTasks: 0,
  events: 0,
  activities: {},
  localActivities: 0,
  signals: {},
  updates: {},
  timers: 0,
  upserts: 0,
  lifecycles: 0,
  nodeTasks: 0,
});

/** Adds one lease history's figures to `work`. */
function addLease(work: WorkflowWork, events: Event[]): void {
  work.leases++;
  work.events += events.length;
  for (const e of events) {
    const type = typeOf(e);
    if (type === 'WORKFLOW_TASK_COMPLETED') work.leaseTasks++;
    else if (type === 'ACTIVITY_TASK_SCHEDULED')
      bump(work.activities, e.activityTaskScheduledEventAttributes?.activityType?.name ?? '?');
    else if (
      type === 'MARKER_RECORDED' &&
      e.markerRecordedEventAttributes?.markerName === 'core_local_activity'
    )
      work.localActivities++;
    else if (type === 'WORKFLOW_EXECUTION_SIGNALED')
      bump(work.signals, e.workflowExecutionSignaledEventAttributes?.signalName ?? '?');
    else if (type === 'WORKFLOW_EXECUTION_UPDATE_ACCEPTED')
      bump(
        work.updates,
        e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name ?? '?',
      );
    else if (type === 'TIMER_STARTED') work.timers++;
    else if (type === 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES') work.upserts++;
  }
}

async function historyOf(client: Client, workflowId: string, runId?: string): Promise<Event[]> {
  return (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
}

/** The node workflow's completed tasks within the window, over every run it had (continue-as-new). */
async function nodeTasksIn(client: Client, nodeId: string, from: number, to: number): Promise<number> {
  let tasks = 0;
  for await (const run of client.workflow.list({ query: `WorkflowId = '${nodeId}'` })) {
    const events = await historyOf(client, nodeId, run.runId);
    tasks += events.filter((e) => {
      const at = msOf(e.eventTime);
      return typeOf(e) === 'WORKFLOW_TASK_COMPLETED' && at >= from && at <= to;
    }).length;
  }
  return tasks;
}

/** The figures of up to `sample` of these leases, and the node's tasks over the window. */
export async function workflowWork(
  client: Client,
  leaseIds: string[],
  nodeId: string,
  window: { from: number; to: number },
  sample = 40,
): Promise<WorkflowWork> {
  const work = noWork();
  for (const id of leaseIds.slice(0, sample)) addLease(work, await historyOf(client, id));
  work.lifecycles = leaseIds.length;
  work.nodeTasks = await nodeTasksIn(client, nodeId, window.from, window.to);
  return work;
}

const sumInto = (a: Record<string, number>, b: Record<string, number>) => {
  const out = { ...a };
  for (const [k, v] of Object.entries(b)) bump(out, k, v);
  return out;
};

export function mergedWork(a?: WorkflowWork, b?: WorkflowWork): WorkflowWork | undefined {
  if (!a || !b) return a ?? b;
  return {
    leases: a.leases + b.leases,
    leaseTasks: a.leaseTasks + b.leaseTasks,
    events: a.events + b.events,
    activities: sumInto(a.activities, b.activities),
    localActivities: a.localActivities + b.localActivities,
    signals: sumInto(a.signals, b.signals),
    updates: sumInto(a.updates, b.updates),
    timers: a.timers + b.timers,
    upserts: a.upserts + b.upserts,
    lifecycles: a.lifecycles + b.lifecycles,
    nodeTasks: a.nodeTasks + b.nodeTasks,
  };
}

/** Lease workflow tasks per lifecycle (the mean over the histories read). */
export const leaseTasksPerLifecycle = (w: WorkflowWork): number => w.leaseTasks / w.leases;

/** One line: the lease's figures per lifecycle, then the node's. */
export function workLine(label: string, w: WorkflowWork): string {
  const per = (n: number) => (n / w.leases).toFixed(1);
  const each = (counts: Record<string, number>) =>
    Object.entries(counts)
      .sort(([x], [y]) => x.localeCompare(y))
      .map(([name, n]) => `${name} ${per(n)}`)
      .join(', ') || 'none';
  return (
    `${label}: per lifecycle (${w.leases} lease histories), lease ${per(w.leaseTasks)} workflow tasks, ` +
    `${per(w.events)} events; activities ${each(w.activities)}; local activities ${per(w.localActivities)}; ` +
    `signals ${each(w.signals)}; updates ${each(w.updates)}; timers ${per(w.timers)}; ` +
    `search-attribute upserts ${per(w.upserts)}; node workflow tasks ${(w.nodeTasks / w.lifecycles).toFixed(2)}`
  );
}
