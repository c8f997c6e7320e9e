// Temporal hops of one CNI call, from the histories of the workflows it touched: the events
// recorded while the call ran, how many were workflow tasks and activities, and when each came.
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

type Event = temporal.api.history.v1.IHistoryEvent;
const { EventType } = temporal.api.enums.v1;

export interface Window {
  from: number;
  to: number;
}

interface Stamped {
  workflow: string;
  at: number;
  type: string;
  activity?: string;
}

const msOf = (t: Event['eventTime']): number =>
  Number(t?.seconds?.toString() ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;

async function eventsIn(client: Client, workflowId: string, window: Window): Promise<Stamped[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const short = workflowId.split('/')[0] ?? workflowId;
  return (history.events ?? [])
    .map((e) => ({
      workflow: short,
      at: msOf(e.eventTime),
      type: (EventType[e.eventType ?? 0] ?? '?').replace('EVENT_TYPE_', '').toLowerCase(),
      activity: e.activityTaskScheduledEventAttributes?.activityType?.name ?? undefined,
    }))
    .filter((e) => e.at >= window.from - 1 && e.at <= window.to + 1);
}

/** One line: events, workflow tasks and activities per workflow, then the timeline (ms from start). */
export async function describeHops(client: Client, workflowIds: string[], window: Window): Promise<string> {
  const all = (await Promise.all(workflowIds.map((id) => eventsIn(client, id, window)))).flat();
  all.sort((a, b) => a.at - b.at);
  const per = workflowIds.map((id) => {
    const short = id.split('/')[0] ?? id;
    const mine = all.filter((e) => e.workflow === short);
    const tasks = mine.filter((e) => e.type === 'workflow_task_scheduled').length;
    const activities = mine.flatMap((e) => (e.activity ? [e.activity] : []));
    const named = activities.length ? ` + activity ${activities.join(', ')}` : '';
    return `${short}: ${mine.length} events, ${tasks} workflow task(s)${named}`;
  });
  const start = window.from;
  const timeline = all
    .filter((e) => /started|completed|accepted|scheduled/.test(e.type))
    .map((e) => `+${(e.at - start).toFixed(0)} ${e.workflow}.${e.type}`)
    .join(', ');
  return `${per.join('; ')} (call ${(window.to - window.from).toFixed(0)} ms)\n    timeline: ${timeline}`;
}
