// The figures of one size, each read from outside the product: the reconciler run (triggered as
// its Schedule triggers it) and the control worker's memory meanwhile, the visibility listings the
// reconciler and GC make, the pool's hand-outs, and history sizes.
import { performance } from 'node:perf_hooks';
import { ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { ReconcileSummary } from '../../activities/reconcile';
import { nodeWorkflowId, poolWorkflowId, reconcileScheduleId } from '../../domain/ids';
import { knownLeases, leasesOfNode } from '../../temporal/visibility';
import { poolStateQuery } from '../../workflows/pool-messages';
import { percentile } from '../bench/figures';
import { rssMiB } from '../bench/proc';
import { waitForValue } from '../harness/wait';

type History = temporal.api.history.v1.IHistory;

const RSS_SAMPLE_MS = 100;
const RECONCILE_DEADLINE_MS = 15 * 60_000;

export interface ReconcileFigure {
  seconds: number;
  /** The reconcileCluster activity alone (its attempt's start to completion). */
  activitySeconds: number;
  summary: ReconcileSummary;
  rssBeforeMiB: number;
  rssPeakMiB: number;
}

/** Peak RSS of `pid` while `work` runs. */
async function peakRss<T>(pid: number, work: () => Promise<T>): Promise<{ value: T; peak: number }> {
  let peak = rssMiB(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), RSS_SAMPLE_MS);
  try {
    return { value: await work(), peak: Math.max(peak, rssMiB(pid)) };
  } finally {
    clearInterval(timer);
  }
}

/** From the (last) start of an activity of this type to its completion, ms. */
function activityMs(history: History, activityType: string): number {
  const scheduled = new Set<string>();
  let startedAt = NaN;
  for (const event of history.events ?? []) {
    if (event.activityTaskScheduledEventAttributes?.activityType?.name === activityType)
      scheduled.add(String(event.eventId));
    const started = event.activityTaskStartedEventAttributes;
    if (started && scheduled.has(String(started.scheduledEventId))) startedAt = tsToMs(event.eventTime);
    const done = event.activityTaskCompletedEventAttributes;
    if (done && scheduled.has(String(done.scheduledEventId))) return tsToMs(event.eventTime) - startedAt;
  }
  return NaN;
}

/** One run of the reconciler's Schedule, triggered now (overlap ALLOW_ALL, as the control worker's start does). */
export async function reconcileOnce(client: Client, taskQueue: string, controlPid: number) {
  const schedule = client.schedule.getHandle(reconcileScheduleId(taskQueue));
  const taken = (await schedule.describe()).info.recentActions.length;
  const rssBeforeMiB = rssMiB(controlPid);
  const { value, peak } = await peakRss(controlPid, async () => {
    await schedule.trigger(ScheduleOverlapPolicy.ALLOW_ALL);
    const described = await waitForValue(
      () => schedule.describe(),
      (d) => d.info.recentActions.length > taken,
      60_000,
      200,
      'the triggered reconcile run',
    );
    const action = described.info.recentActions.at(-1)?.action;
    if (action?.type !== 'startWorkflow') throw new Error('the reconcile schedule started no workflow');
    const handle = client.workflow.getHandle(action.workflow.workflowId);
    const summary = await client.connection.withDeadline(Date.now() + RECONCILE_DEADLINE_MS, () =>
      handle.result(),
    );
    const { startTime, closeTime } = await handle.describe();
    const activitySeconds = activityMs(await handle.fetchHistory(), 'reconcileCluster') / 1000;
    return {
      activitySeconds,
      summary: summary as ReconcileSummary,
      seconds: ((closeTime ?? startTime).getTime() - startTime.getTime()) / 1000,
    };
  });
  return { ...value, rssBeforeMiB, rssPeakMiB: peak } satisfies ReconcileFigure;
}

export interface ListingFigure {
  allLeases: number;
  allMs: number;
  perNodeLeases: number[];
  perNodeMs: number[];
  /** By PodUID, as netleasectl lists a pod's leases (the pod watcher did for each event until issue 27). */
  perPodMs: number[];
}

const timed = async <T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> => {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
};

/**
 * The open leases listed as the reconciler lists them, by NodeName as GC lists a node's, and by
 * PodUID as netleasectl lists a pod's (and the pod watcher did for each event until issue 27).
 */
export async function listings(
  client: Client,
  taskQueue: string,
  nodes: string[],
  podUids: string[],
): Promise<ListingFigure> {
  const all = await timed(() => knownLeases(client, taskQueue));
  const perNodeLeases: number[] = [];
  const perNodeMs: number[] = [];
  for (const node of nodes) {
    const one = await timed(() => leasesOfNode(client, taskQueue, node));
    perNodeLeases.push(one.value.length);
    perNodeMs.push(one.ms);
  }
  const perPodMs: number[] = [];
  for (const uid of podUids)
    perPodMs.push((await timed(() => knownLeases(client, taskQueue, ` AND PodUID = '${uid}'`))).ms);
  return { allLeases: all.value.length, allMs: all.ms, perNodeLeases, perNodeMs, perPodMs };
}

const historyOf = (client: Client, workflowId: string): Promise<History> =>
  client.workflow.getHandle(workflowId).fetchHistory();

const bytesOf = (history: History): number => temporal.api.history.v1.History.encode(history).finish().length;

export interface HistorySizes {
  count: number;
  eventsMean: number;
  eventsMax: number;
  bytesMean: number;
  bytesMax: number;
}

/** Events and encoded bytes of each workflow's (latest run's) history. */
export async function historySizes(client: Client, workflowIds: string[]): Promise<HistorySizes> {
  const events: number[] = [];
  const bytes: number[] = [];
  for (const id of workflowIds) {
    const history = await historyOf(client, id);
    events.push(history.events?.length ?? 0);
    bytes.push(bytesOf(history));
  }
  const mean = (v: number[]) => (v.length ? v.reduce((a, b) => a + b, 0) / v.length : NaN);
  return {
    count: workflowIds.length,
    eventsMean: mean(events),
    eventsMax: Math.max(...events),
    bytesMean: mean(bytes),
    bytesMax: Math.max(...bytes),
  };
}

/** acquireBlock activities of a node workflow's history: scheduled → completed, ms each. */
function acquireBlockMs(history: History): number[] {
  const scheduled = new Map<string, number>();
  const durations: number[] = [];
  for (const event of history.events ?? []) {
    const at = tsToMs(event.eventTime);
    if (event.activityTaskScheduledEventAttributes?.activityType?.name === 'acquireBlock')
      scheduled.set(String(event.eventId), at);
    const done = event.activityTaskCompletedEventAttributes;
    const from = done ? scheduled.get(String(done.scheduledEventId)) : undefined;
    if (from !== undefined) durations.push(at - from);
  }
  return durations;
}

export interface HandOutFigure {
  /** Blocks the pool holds handed out (one per node and family for these sizes). */
  blocks: number;
  poolHistoryEvents: number;
  /** acquireBlock durations seen by the sampled nodes, ms. */
  handOutMs: number[];
  nodeHistory: HistorySizes;
}

export async function handOuts(client: Client, pool: string, nodes: string[]): Promise<HandOutFigure> {
  const poolHandle = client.workflow.getHandle(poolWorkflowId(pool));
  const state = await poolHandle.query(poolStateQuery);
  const poolHistory = await historyOf(client, poolWorkflowId(pool));
  const handOutMs = [];
  for (const node of nodes) handOutMs.push(...acquireBlockMs(await historyOf(client, nodeWorkflowId(node))));
  return {
    blocks: Object.keys(state.blocks).length,
    poolHistoryEvents: poolHistory.events?.length ?? 0,
    handOutMs,
    nodeHistory: await historySizes(client, nodes.map(nodeWorkflowId)),
  };
}

export const p50 = (values: number[]): number => percentile(values, 0.5);
export const p99 = (values: number[]): number => percentile(values, 0.99);

/** Workflows of this task queue that ended badly (a bug, never a bad request: docs/architecture.md). */
export async function badlyEnded(client: Client, taskQueue: string): Promise<number> {
  const query = `TaskQueue = '${taskQueue}' AND ExecutionStatus IN ('Failed', 'Terminated', 'TimedOut')`;
  return (await client.workflow.count(query)).count;
}

/** Lease workflows of this task queue matching `more`. */
export async function leaseCount(client: Client, taskQueue: string, more: string): Promise<number> {
  const query = `WorkflowType = 'leaseWorkflow' AND TaskQueue = '${taskQueue}' AND ${more}`;
  return (await client.workflow.count(query)).count;
}
