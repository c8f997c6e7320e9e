// One pod's whole life as a cluster lives it, `lanes` pods in flight, per plugin: created and bound
// (netlease's agent pre-produces its lease then), ADD, Running, deleted, DEL, removed; the window
// closes once every pod's addresses are free again (netlease: every lease Released, its addresses
// back with the node), so the produce and release work a pre-produced ADD+DEL leaves out is in it.
// CPU is read from every stack process; a row is charged its plugin's processes, its executables
// and the Kubernetes API (apiserver + etcd), which every plugin's pods use.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import type { LeaseState } from '../../domain/lease';
import { waitFor } from '../../tools/processes';
import { offerFileOf } from '../../worker/agent/offers';
import { inFlight, lanesUntil } from './phases';
import { type BenchPod, type Plugin } from './plugins';
import type { PodOps } from './pod-ops';
import { cpuSpent, sampleCpu, type CpuSample } from './proc';
import { API_PROCESSES, type Lifecycles, type Releases } from './figures';
import { TASK_QUEUE, type BenchStack } from './stack';
import { workflowWork, type WorkflowWork } from './workflow-work';

export interface LifecycleDriver {
  /** Its CNI calls; its `involved` processes are charged to the row. */
  plugin: Plugin;
  /** The node its pods are bound to (netlease's: the agent's; the peers': one no agent watches). */
  node: string;
  /** What the runtime's sandbox set-up overlaps before the ADD; false: not ready by its deadline. */
  beforeAdd(pod: BenchPod): Promise<boolean>;
  /** After the last lifecycle, until what the pods held is free; how many are not by its deadline. */
  released(pods: BenchPod[], namespace: string): Promise<number>;
  /** netlease: each lease's release lag from its pod's DEL, and who released it. */
  releases?(dels: Map<BenchPod, number>): Promise<Releases>;
  /** netlease: what the lifecycles cost Temporal, from their histories (workflow-work). */
  work?(pods: BenchPod[], window: { from: number; to: number }): Promise<WorkflowWork>;
  /** Before the window opens and after it closes (netlease: start and stop more control workers). */
  prepare?(): Promise<void>;
  finish?(): Promise<void>;
  /** The processes charged besides the executables and the API, read once prepared (default: the plugin's). */
  charged?(): string[];
}

const freeAfterDel = async () => 0;

/** host-local and whereabouts: their DEL frees the address (a file, an IPPool entry). */
export const peerDriver = (plugin: Plugin, node: string): LifecycleDriver => ({
  plugin,
  node,
  beforeAdd: async () => true,
  released: freeAfterDel,
});

const OFFER_DEADLINE_MS = 10_000;
/** ADD+DELs (cold, not counted) through a row's freshly started control workers before its window. */
const WARM_UP_PAIRS = 16;
const RELEASE_DEADLINE_MS = 120_000;

/**
 * netlease's shim and agent with `workers` control workers on the task queue (the stack's, plus
 * more started for the row and stopped after it); the ADD waits (bounded) for the agent to hold the
 * pod's offer. Charged every stack process but the ptp agent.
 */
export function netleaseDriver(
  stack: BenchStack,
  plugin: Plugin,
  client: Client,
  { node, workers }: { node: string; workers: number },
): LifecycleDriver {
  const offerOf = (pod: BenchPod) => join(stack.offerDir, offerFileOf(leaseWorkflowId(pod.uid, 'eth0')));
  const leases = (namespace: string, more: string) =>
    `WorkflowType = 'leaseWorkflow' AND TaskQueue = '${TASK_QUEUE}' AND PodRef STARTS_WITH '${namespace}/' AND ${more}`;
  const more = workers - 1;
  const reconciling = `WorkflowType = 'reconcileWorkflow' AND TaskQueue = '${TASK_QUEUE}' AND ExecutionStatus = 'Running'`;
  const count = async (query: string) => (await client.workflow.count(query)).count;
  return {
    plugin,
    node,
    // An agent that pre-produces nothing holds no offer: its ADDs go cold, and are counted.
    beforeAdd: async (pod) =>
      !stack.preProduceMissing && waitFor(() => existsSync(offerOf(pod)), OFFER_DEADLINE_MS, 5),
    async released(pods, namespace) {
      const open = leases(namespace, "ExecutionStatus = 'Running'");
      await waitFor(async () => (await count(open)) === 0, RELEASE_DEADLINE_MS, 200);
      return pods.length - (await count(leases(namespace, "LeasePhase = 'Released'")));
    },
    async releases(dels) {
      const each = await Promise.all(
        [...dels].map(async ([pod, delAt]) => {
          const handle = client.workflow.getHandle(leaseWorkflowId(pod.uid, 'eth0'));
          const [{ closeTime }, state] = await Promise.all([
            handle.describe(),
            handle.result() as Promise<LeaseState>,
          ]);
          return { lagMs: (closeTime?.getTime() ?? NaN) - delAt, source: sourceOf(state.releaseReason) };
        }),
      );
      const by: Record<string, number> = {};
      for (const { source } of each) by[source] = (by[source] ?? 0) + 1;
      return { lagsMs: each.map((e) => e.lagMs), by };
    },
    work: (pods, window) =>
      workflowWork(
        client,
        pods.map((pod) => leaseWorkflowId(pod.uid, 'eth0')),
        nodeWorkflowId(node),
        window,
      ),
    async prepare() {
      if (more === 0) return;
      for (let i = 0; i < more; i++) await stack.addControlWorker();
      // A new worker's first workflows build its V8 contexts and warm its JIT: not the row's cost.
      // A reconcile run (its start's, or a new watch holder's) may release these pod-less leases mid-ADD.
      const tolerant = {
        ...plugin,
        call: (verb: 'ADD' | 'DEL', pod: BenchPod) => plugin.call(verb, pod).catch(() => undefined),
      };
      await inFlight(tolerant, WARM_UP_PAIRS, WARM_UP_PAIRS / 2, RELEASE_DEADLINE_MS);
      await waitFor(async () => (await count(reconciling)) === 0, RELEASE_DEADLINE_MS, 200);
    },
    async finish() {
      for (let i = 0; i < more; i++) await stack.removeControlWorker();
    },
    charged: () => Object.keys(stack.pids()),
  };
}

/** "watcher: pod deleted" → watcher; a reason without a source is counted whole. */
const sourceOf = (reason = 'none'): string => reason.split(':')[0] ?? reason;

/** The charged names: the executables, the plugin's own processes and the API. */
const chargedOf = (driver: LifecycleDriver): string[] => [
  ...new Set([
    'executables',
    ...(driver.charged?.() ?? Object.keys(driver.plugin.involved)),
    ...API_PROCESSES,
  ]),
];

/**
 * `count` lifecycles of `driver`'s pods in `ops`' namespace, `lanes` in flight, until done or none
 * starts after `budgetMs`; CPU of every process `pids()` names once the driver is prepared.
 */
export async function lifecycles(
  driver: LifecycleDriver,
  ops: PodOps,
  pids: () => Record<string, number>,
  shape: { count: number; lanes: number; budgetMs: number },
): Promise<Lifecycles> {
  const { plugin, node } = driver;
  const pods: BenchPod[] = [];
  const latencies: number[] = [];
  const dels = new Map<BenchPod, number>();
  let unready = 0;
  const one = async () => {
    const started = performance.now();
    const pod = await ops.createBound(node);
    if (!(await driver.beforeAdd(pod))) unready++;
    await plugin.call('ADD', pod);
    await ops.markRunning(pod);
    await ops.deleteGracefully(pod);
    await plugin.call('DEL', pod);
    dels.set(pod, Date.now());
    await ops.remove(pod);
    latencies.push(performance.now() - started);
    pods.push(pod);
  };
  await driver.prepare?.();
  const all = pids();
  const charged = chargedOf(driver);
  const before = sampleCpu(all);
  const started = performance.now();
  const from = Date.now();
  await lanesUntil(shape.count, shape.lanes, shape.budgetMs, one);
  const unreleased = await driver.released(pods, ops.namespace);
  const seconds = (performance.now() - started) / 1000;
  const cpu = cpuSpent(before, sampleCpu(all));
  const window = { from, to: Date.now() };
  const releases = await driver.releases?.(dels);
  const work = await driver.work?.(pods, window);
  await driver.finish?.();
  return {
    label: plugin.label,
    lifecycles: pods.length,
    seconds,
    cpu,
    charged,
    latencies,
    unready,
    unreleased,
    releases,
    work,
  };
}

/**
 * CPU ms per second each process spends with no pod coming or going (watches, pollers, timers): a
 * row's window is charged it too, so a slower row carries more of it.
 */
export async function idleCpuPerSecond(pids: Record<string, number>, windowMs: number): Promise<CpuSample> {
  const before = sampleCpu(pids);
  await sleep(windowMs); // the measured interval itself, not a wait for anything
  const spent = Object.entries(cpuSpent(before, sampleCpu(pids))).filter(([name]) => name !== 'executables');
  return Object.fromEntries(spent.map(([name, ms]) => [name, (ms * 1000) / windowMs]));
}
