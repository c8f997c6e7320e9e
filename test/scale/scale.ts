// The scale simulation: per size, a fresh stack with N nodes, N × leasesPerNode pods admitted
// (their leases open and Running), the figures taken with them open, a throughput batch of whole
// lifecycles on top, then every pod retired and every lease Released.
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { podOps, type PodOps } from '../bench/pod-ops';
import { lanesUntil } from '../bench/phases';
import { cpuSpent, rssMiB, sampleCpu } from '../bench/proc';
import { waitForValue } from '../harness/wait';
import { seeded, type Random } from '../soak/random';
import { admit, leaseIdOf, retire, type LeaseTarget, type Lifecycles, type ScalePod } from './lifecycle';
import {
  badlyEnded,
  handOuts,
  historySizes,
  leaseCount,
  listings,
  reconcileOnce,
  type HandOutFigure,
  type HistorySizes,
  type ListingFigure,
  type ReconcileFigure,
} from './measure';
import type { ScaleOptions } from './options';
import { ScaleStack } from './stack';

export interface SizeFigures {
  nodes: number;
  /** The control worker's task queue: every workflow of the size ran on it. */
  taskQueue: string;
  leases: number;
  startSeconds: number;
  /** Leases admitted per second while the population grew (ADD + Running, `inFlight` at once). */
  fillPerSecond: number;
  addRetries: number;
  controlRssMiB: { idle: number; filled: number; end: number };
  temporalRssMiB?: number;
  agentsRssMiB: number;
  reconcile: ReconcileFigure;
  listing: ListingFigure;
  handOuts: HandOutFigure;
  throughput: {
    lifecycles: number;
    seconds: number;
    perSecond: number;
    cpuMsPerLifecycle: Record<string, number>;
  };
  history: { closed: HistorySizes; open: HistorySizes };
  end: { released: number; expected: number; releaseSeconds: number; badlyEnded: number };
}

const FILL_BUDGET_MS = 3 * 3600_000;
const settleMs = (leases: number) => 120_000 + leases * 50;
/** Releasing goes through the control worker's pod watcher, one event at a time (docs/benchmarks.md, "Scale"). */
const releaseMs = (leases: number) => 120_000 + leases * 250;

/** `count` pods admitted on random nodes, `lanes` at once. */
async function admitMany(
  target: LeaseTarget,
  ops: PodOps,
  nodes: () => string,
  count: number,
  lanes: number,
  counts: Lifecycles,
): Promise<ScalePod[]> {
  const pods: ScalePod[] = [];
  await lanesUntil(
    count,
    lanes,
    FILL_BUDGET_MS,
    async () => void pods.push(await admit(target, ops, nodes(), counts)),
  );
  return pods;
}

async function retireMany(target: LeaseTarget, ops: PodOps, pods: ScalePod[], lanes: number): Promise<void> {
  const queue = [...pods];
  await lanesUntil(pods.length, lanes, FILL_BUDGET_MS, async () => {
    const pod = queue.shift();
    if (pod) await retire(target, ops, pod);
  });
}

/** Until visibility counts `expected` leases matching `more` (visibility lags the workflows). */
async function untilCounted(
  target: LeaseTarget,
  more: string,
  expected: number,
  timeoutMs: number,
): Promise<void> {
  await waitForValue(
    () => leaseCount(target.client, target.taskQueue, more),
    (n) => n === expected,
    timeoutMs,
    500,
    `${expected} leases with ${more}`,
  );
}

/** The sample's nodes, spread over the size. */
const spread = (items: string[], count: number): string[] =>
  items.filter((_, i) => i % Math.max(1, Math.floor(items.length / count)) === 0).slice(0, count);

async function throughput(target: LeaseTarget, stack: ScaleStack, random: Random, options: ScaleOptions) {
  const ops = await podOps(stack.kubeClients, `${stack.namespace}-t`);
  const counts = { addRetries: 0 };
  const pods: ScalePod[] = [];
  const pids = stack.pids();
  const before = sampleCpu(pids);
  const started = performance.now();
  await lanesUntil(options.lifecycles, options.inFlight, FILL_BUDGET_MS, async () => {
    const pod = await admit(target, ops, random.pick(stack.nodeNames), counts);
    await retire(target, ops, pod);
    pods.push(pod);
  });
  await untilCounted(
    target,
    `PodRef STARTS_WITH '${ops.namespace}/' AND ExecutionStatus = 'Running'`,
    0,
    settleMs(pods.length),
  );
  const seconds = (performance.now() - started) / 1000;
  const spent = cpuSpent(before, sampleCpu(pids));
  const cpuMsPerLifecycle = Object.fromEntries(Object.entries(spent).map(([k, v]) => [k, v / pods.length]));
  return {
    pods,
    figure: { lifecycles: pods.length, seconds, perSecond: pods.length / seconds, cpuMsPerLifecycle },
  };
}

export async function runSize(
  options: ScaleOptions,
  nodes: number,
  dir: string,
  print: (line: string) => void,
): Promise<SizeFigures> {
  const random = seeded(options.seed + nodes);
  const startedAt = performance.now();
  const stack = await ScaleStack.start({ dir, nodes, temporal: options.temporal, server: options.server });
  try {
    const startSeconds = (performance.now() - startedAt) / 1000;
    print(`${nodes} nodes: stack up in ${startSeconds.toFixed(0)} s (task queue ${stack.taskQueue})`);
    const target: LeaseTarget = { client: stack.client, taskQueue: stack.taskQueue, pool: stack.pool };
    const idle = rssMiB(stack.control.pid);
    const ops = await podOps(stack.kubeClients, stack.namespace);
    const expected = nodes * options.leasesPerNode;
    const counts = { addRetries: 0 };
    let next = 0;
    const filledFrom = performance.now();
    const population = await admitMany(
      target,
      ops,
      () => stack.nodeNames[next++ % nodes] as string,
      expected,
      options.inFlight,
      counts,
    );
    await untilCounted(
      target,
      `ExecutionStatus = 'Running' AND LeasePhase = 'Running'`,
      expected,
      settleMs(expected),
    );
    const fillPerSecond = expected / ((performance.now() - filledFrom) / 1000);
    print(`${nodes} nodes: ${expected} leases Running (${fillPerSecond.toFixed(1)}/s)`);
    const filled = rssMiB(stack.control.pid);
    const sampled = spread(stack.nodeNames, options.nodeSample);
    const handOutFigure = await handOuts(stack.client, stack.pool, sampled);
    const podSample = spread(
      population.map((p) => p.uid),
      options.nodeSample,
    );
    const listing = await listings(stack.client, stack.taskQueue, sampled, podSample);
    const reconcile = await reconcileOnce(stack.client, stack.taskQueue, stack.control.pid);
    print(
      `${nodes} nodes: reconcile ${reconcile.seconds.toFixed(1)} s, list all ${listing.allMs.toFixed(0)} ms`,
    );
    const batch = await throughput(target, stack, random, options);
    print(`${nodes} nodes: ${batch.figure.lifecycles} lifecycles at ${batch.figure.perSecond.toFixed(1)}/s`);
    const history = {
      closed: await historySizes(stack.client, batch.pods.slice(0, options.historySample).map(leaseIdOf)),
      open: await historySizes(stack.client, population.slice(0, options.historySample).map(leaseIdOf)),
    };
    // Taken with the leases open: kept even if releasing them all outlasts the run's patience.
    const open = {
      nodes,
      leases: expected,
      fillPerSecond,
      reconcile,
      listing,
      handOuts: handOutFigure,
      history,
    };
    writeFileSync(
      join(dir, 'figures-open.json'),
      JSON.stringify({ ...open, throughput: batch.figure }, null, 2),
    );
    const releaseFrom = performance.now();
    await retireMany(target, ops, population, options.inFlight);
    await untilCounted(target, `ExecutionStatus = 'Running'`, 0, releaseMs(expected));
    const releaseSeconds = (performance.now() - releaseFrom) / 1000;
    const figures: SizeFigures = {
      nodes,
      taskQueue: stack.taskQueue,
      leases: expected,
      startSeconds,
      fillPerSecond,
      addRetries: counts.addRetries,
      controlRssMiB: { idle, filled, end: rssMiB(stack.control.pid) },
      ...(stack.server ? { temporalRssMiB: rssMiB(stack.server.pid) } : {}),
      agentsRssMiB: rssMiB(process.pid),
      reconcile,
      listing,
      handOuts: handOutFigure,
      throughput: batch.figure,
      history,
      end: {
        released: await leaseCount(target.client, target.taskQueue, `LeasePhase = 'Released'`),
        expected: expected + batch.figure.lifecycles,
        releaseSeconds,
        badlyEnded: await badlyEnded(stack.client, stack.taskQueue),
      },
    };
    writeFileSync(join(dir, 'figures.json'), JSON.stringify(figures, null, 2));
    return figures;
  } finally {
    await stack.stop();
  }
}

export interface ScaleReport {
  dir: string;
  seed: number;
  sizes: SizeFigures[];
}

export async function runScale(options: ScaleOptions, print: (line: string) => void): Promise<ScaleReport> {
  const dir = options.dir ?? join(tmpdir(), `netlease-scale-${randomBytes(4).toString('hex')}`);
  mkdirSync(dir, { recursive: true });
  print(
    `scale: seed ${options.seed}, sizes ${options.sizes.join(', ')} × ${options.leasesPerNode} leases, run dir ${dir}`,
  );
  const sizes: SizeFigures[] = [];
  for (const nodes of options.sizes) {
    sizes.push(await runSize(options, nodes, join(dir, `nodes-${nodes}`), print));
    writeFileSync(join(dir, 'figures.json'), JSON.stringify({ seed: options.seed, sizes }, null, 2));
  }
  return { dir, seed: options.seed, sizes };
}
