// One soak run: the stack, the workload and the faults at once, the checker sampling throughout;
// then every pod deleted, convergence to nothing held, and every history replayed.
import { closeSync, mkdirSync, mkdtempSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { replayTaskQueue } from '../harness/replay';
import { Checker, INVARIANTS, type Finding, type Invariant } from './checker';
import { Faults, type FaultRecord } from './faults';
import type { FaultKind, SoakOptions } from './options';
import { seeded, type Random } from './random';
import { SoakStack } from './stack';
import { SOAK_NAMESPACE, Workload, type WorkloadStats } from './workload';

const CONVERGE_DEADLINE_MS = 120_000;
const FINAL_DEADLINE_MS = 240_000;

export interface SoakReport {
  seed: number;
  options: SoakOptions;
  dir: string;
  durationMs: number;
  workload: WorkloadStats;
  faults: FaultRecord[];
  samples: number;
  incompleteSamples: number;
  violations: Record<Invariant, number>;
  /** The violations themselves, with the histories to read. */
  findings: Finding[];
  /** After the drain: what was still held or made, if anything. */
  leftAtEnd: string[];
  replayed: number;
  replayErrors: string[];
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every kind once (in a seeded order), then kinds at random. */
function* faultOrder(kinds: FaultKind[], random: Random): Generator<FaultKind> {
  const first = [...kinds].sort(() => random.next() - 0.5);
  yield* first;
  while (kinds.length) yield random.pick(kinds);
}

async function converge(checker: Checker, deadlineMs: number): Promise<number | undefined> {
  const started = Date.now();
  while (Date.now() - started < deadlineMs) {
    if (checker.settled(await checker.sample())) return Date.now() - started;
    await pause(250);
  }
  return undefined;
}

async function injectFaults(
  faults: Faults,
  checker: Checker,
  options: SoakOptions,
  random: Random,
  began: number,
  running: () => boolean,
  injected: Set<FaultKind>,
): Promise<FaultRecord[]> {
  const records: FaultRecord[] = [];
  const order = faultOrder(options.faults, random);
  while (running()) {
    await pause(options.faultEverySeconds * 1000 * (0.5 + random.next()));
    const next = order.next();
    if (!running() || next.done) break;
    const at = Date.now() - began;
    const target = await faults.inject(next.value);
    injected.add(next.value);
    const record: FaultRecord = { kind: next.value, target, at, recoveredAt: Date.now() - began };
    record.convergedMs = await converge(checker, CONVERGE_DEADLINE_MS);
    records.push(record);
  }
  return records;
}

async function sampleWhile(checker: Checker, running: () => boolean): Promise<void> {
  while (running()) {
    await checker.sample();
    await pause(1000);
  }
}

/** Any pod the workload left (a lifecycle cut by an error) is deleted, finalizers cleared. */
async function deleteLeftPods(stack: SoakStack, workload: Workload): Promise<void> {
  const { core } = stack.kubeClients;
  for (const pod of (await core.listNamespacedPod({ namespace: SOAK_NAMESPACE })).items) {
    const name = pod.metadata?.name ?? '';
    await core
      .deleteNamespacedPod({ name, namespace: SOAK_NAMESPACE, gracePeriodSeconds: 0 })
      .catch(() => undefined);
    await workload.clearFinalizer(name, pod.metadata?.uid ?? '');
  }
}

/** What is still held once every pod is gone: addresses of open leases, allocations in the tables. */
async function leftovers(checker: Checker): Promise<string[]> {
  const sample = await checker.sample();
  if (!sample.complete) return [`unreadable: ${sample.unreadable}`];
  const left = sample.addresses ? [`${sample.addresses} addresses held by open leases`] : [];
  for (const [node, held] of await checker.allocations())
    if (held) left.push(`${held} allocations on ${node}`);
  return left;
}

async function finalConvergence(checker: Checker): Promise<string[]> {
  const deadline = Date.now() + FINAL_DEADLINE_MS;
  let left = ['not read'];
  while (Date.now() < deadline) {
    left = await leftovers(checker).catch((err: unknown) => [`unreadable: ${String(err)}`]);
    if (left.length === 0) return [];
    await pause(1000);
  }
  return left;
}

export async function runSoak(options: SoakOptions, progress: (line: string) => void): Promise<SoakReport> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'netlease-soak-'));
  mkdirSync(dir, { recursive: true });
  const log = openSync(join(dir, 'soak.log'), 'a');
  const random = seeded(options.seed);
  const began = Date.now();
  progress(`soak: seed ${options.seed}, ${options.nodes} nodes, state and logs in ${dir}`);
  const stack = await SoakStack.start(dir, options.nodes, log);
  const workload = new Workload(stack, random);
  // Ctrl-C or a kill: the stack's processes and namespaces go with the run, not after it.
  const interrupted = () => void stack.stop(workload.sandboxes.values()).finally(() => process.exit(130));
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    await workload.createNamespace();
    const checker = new Checker({
      client: stack.client,
      core: stack.kubeClients.core,
      namespace: SOAK_NAMESPACE,
      taskQueue: stack.taskQueue,
      nodes: () => stack.nodes.map((n) => n.name),
      ledger: workload.ledger,
      sandboxes: workload.sandboxes,
    });
    let running = true;
    const ticker = setInterval(
      () => progress(`soak: ${JSON.stringify(workload.stats.completed)} lifecycles`),
      30_000,
    );
    const sampling = sampleWhile(checker, () => running);
    const injected = new Set<FaultKind>();
    const faulting = injectFaults(
      new Faults(stack, workload, random),
      checker,
      options,
      random,
      began,
      () => running,
      injected,
    );
    const end = began + options.minutes * 60_000;
    const hardEnd = began + 3 * options.minutes * 60_000;
    const everyKindDone = () => options.faults.every((kind) => injected.has(kind));
    const goOn = () => Date.now() < end || (options.everyFault && !everyKindDone() && Date.now() < hardEnd);
    await workload.run(options.lifecycles, options.inFlight, goOn);
    running = false;
    clearInterval(ticker);
    const faults = await faulting;
    await sampling;
    progress(
      `soak: workload done (${workload.stats.completed} lifecycles, ${faults.length} faults); draining`,
    );
    await deleteLeftPods(stack, workload);
    const leftAtEnd = await finalConvergence(checker);
    const { replayed, errors } = await replayTaskQueue(stack.client, stack.taskQueue);
    const findings = [...checker.violations.values()].flat();
    return {
      seed: options.seed,
      options,
      dir,
      durationMs: Date.now() - began,
      workload: workload.stats,
      faults,
      samples: checker.samples,
      incompleteSamples: checker.incomplete,
      violations: Object.fromEntries(
        INVARIANTS.map((i) => [i, checker.violations.get(i)?.length ?? 0]),
      ) as Record<Invariant, number>,
      findings,
      leftAtEnd,
      replayed,
      replayErrors: errors,
    };
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    await stack.stop(workload.sandboxes.values());
    closeSync(log);
  }
}
