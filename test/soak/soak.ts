// One soak run: the stack, the workload and the faults at once (two at a time now and then), the
// checker sampling throughout; then every pod deleted, convergence to nothing held, the answer
// history checked, and every history replayed and searched for failed workflow tasks.
import { closeSync, mkdirSync, mkdtempSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AnswerLog, checkAnswerHistory, type HistoryVerdict } from './answers';
import { Checker, INVARIANTS, type Finding, type Invariant } from './checker';
import { Faults, partsOf, planFault, type FaultPlan, type FaultRecord } from './faults';
import { checkHistories } from './histories';
import type { FaultKind, SoakOptions } from './options';
import { seeded, type Random } from './random';
import { SELECTED_POOL } from './pools';
import { SOAK_POOL, SoakStack } from './stack';
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
  /** Open leases the checker read by id because visibility had not listed them yet. */
  unlistedLeases: number;
  violations: Record<Invariant, number>;
  /** The violations themselves, with the histories to read. */
  findings: Finding[];
  /** After the drain: what was still held or made, if anything. */
  leftAtEnd: string[];
  /** The answer history's check (every ADD answer), or why it could not be read. */
  answerHistory: Omit<HistoryVerdict, 'overlaps'> | { error: string };
  replayed: number;
  replayErrors: string[];
  /** Workflow tasks that failed by the workflow's doing and were completed by a later one. */
  recoveredTasks: string[];
  /** Histories that do not replay only by the SDK core's order of an update (histories.ts). */
  sdkUpdateOrder: string[];
  /** Control worker exits on a thaw after a freeze past the SDK's activation timeout (stack.ts). */
  thawCrashes: string[];
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every kind once (in a seeded order, each as soon as what it works is free), then kinds at random. */
class FaultOrder {
  private readonly pending: FaultKind[];

  constructor(
    private readonly kinds: FaultKind[],
    private readonly random: Random,
  ) {
    this.pending = [...kinds].sort(() => random.next() - 0.5);
  }

  next(nodes: Parameters<typeof planFault>[1], busy: Set<string>): FaultPlan | undefined {
    const pick = <T>(items: readonly T[]) => this.random.pick(items);
    for (const [i, kind] of this.pending.entries()) {
      const plan = planFault(kind, nodes, busy, pick);
      if (!plan) continue;
      this.pending.splice(i, 1);
      return plan;
    }
    for (let tries = 0; tries < 10 && this.kinds.length; tries++) {
      const plan = planFault(this.random.pick(this.kinds), nodes, busy, pick);
      if (plan) return plan;
    }
    return undefined;
  }
}

async function converge(checker: Checker, deadlineMs: number): Promise<number | undefined> {
  const started = Date.now();
  while (Date.now() - started < deadlineMs) {
    if (checker.settled(await checker.sample())) return Date.now() - started;
    await pause(250);
  }
  return undefined;
}

interface Injection {
  faults: Faults;
  checker: Checker;
  stack: SoakStack;
  options: SoakOptions;
  random: Random;
  began: number;
  running: () => boolean;
  injected: Set<FaultKind>;
}

/** One fault, started after `delayMs`; a fault that throws is recorded with its error. */
async function injectOne(run: Injection, plan: FaultPlan, delayMs: number): Promise<FaultRecord> {
  await pause(delayMs);
  const at = Date.now() - run.began;
  const record: FaultRecord = { kind: plan.kind, target: plan.node?.name ?? '', at, recoveredAt: at };
  try {
    record.target = await run.faults.inject(plan);
  } catch (err) {
    record.error = err instanceof Error ? err.message : String(err);
  }
  record.recoveredAt = Date.now() - run.began;
  run.injected.add(plan.kind); // done: the workload runs on until the last kind has had its effect
  return record;
}

async function injectFaults(run: Injection): Promise<FaultRecord[]> {
  const records: FaultRecord[] = [];
  const order = new FaultOrder(run.options.faults, run.random);
  while (run.running()) {
    await pause(run.options.faultEverySeconds * 1000 * (0.5 + run.random.next()));
    const first = run.running() ? order.next(run.stack.nodes, new Set()) : undefined;
    if (!first) continue;
    const second = run.random.chance(run.options.overlap)
      ? order.next(run.stack.nodes, new Set(partsOf(first)))
      : undefined;
    const pair = await Promise.all([
      injectOne(run, first, 0),
      ...(second ? [injectOne(run, second, run.random.int(0, 3000))] : []),
    ]);
    const convergedMs = await converge(run.checker, CONVERGE_DEADLINE_MS);
    for (const record of pair) {
      record.convergedMs = convergedMs;
      const other = pair.find((r) => r !== record);
      if (other) record.with = other.kind;
    }
    records.push(...pair);
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
async function deleteLeftPods(workload: Workload): Promise<void> {
  for (const pod of await workload.pods.list()) {
    await workload.pods.forceRemove(pod.name, pod.uid);
    workload.removed(pod.uid);
  }
}

/** What is still held once every pod is gone: addresses of open leases, allocations in the tables. */
async function leftovers(checker: Checker): Promise<string[]> {
  const sample = await checker.sample();
  if (!sample.complete) return [`unreadable: ${sample.unreadable}`];
  const left = sample.addresses ? [`${sample.addresses} addresses held by open leases`] : [];
  for (const [node, held] of await checker.allocations())
    if (held) left.push(`${held} allocations on ${node}`);
  left.push(...(await checker.blockDisagreements([SOAK_POOL, SELECTED_POOL])));
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

/** The answer history's verdict: overlaps become violations; an unreadable ledger is reported. */
function judgeAnswers(file: string, checker: Checker, poolResets: number[]): SoakReport['answerHistory'] {
  try {
    const { overlaps, ...read } = checkAnswerHistory(file, poolResets);
    for (const broken of read.kept.broken)
      checker.violation({
        invariant: 'kept-address',
        subject: broken.split(':')[0] ?? '',
        detail: broken,
        workflows: [],
      });
    for (const { address, first, second } of overlaps)
      checker.violation({
        invariant: 'duplicate-answer',
        subject: address,
        detail: `${address} answered to pod ${first.podName} (${first.podUid}, ${first.containerId}) for ${new Date(first.from).toISOString()}..${Number.isFinite(first.to) ? new Date(first.to).toISOString() : 'its end'} and to pod ${second.podName} (${second.podUid}, ${second.containerId}) at ${new Date(second.from).toISOString()}`,
        workflows: [`lease/${first.podUid}/eth0`, `lease/${second.podUid}/eth0`],
      });
    return read;
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

export async function runSoak(options: SoakOptions, progress: (line: string) => void): Promise<SoakReport> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'netlease-soak-'));
  mkdirSync(dir, { recursive: true });
  const log = openSync(join(dir, 'soak.log'), 'a');
  const random = seeded(options.seed);
  const began = Date.now();
  progress(`soak: seed ${options.seed}, ${options.nodes} nodes, state and logs in ${dir}`);
  const stack = await SoakStack.start(dir, options.nodes, log);
  const answers = new AnswerLog(join(dir, 'answers.jsonl'));
  const workload = new Workload(stack, random, answers);
  // Ctrl-C or a kill: the stack's processes and namespaces go with the run, not after it.
  // SIGINT: the run ends early as it would at its end (drain, checks, report); SIGINT again or
  // SIGTERM: the stack's processes and namespaces go with the run at once.
  let ending = false;
  const interrupted = () => void stack.stop(workload.sandboxes.values()).finally(() => process.exit(130));
  const endEarly = () => {
    if (ending) return interrupted();
    ending = true;
    progress('soak: ending early (SIGINT); SIGINT again stops at once');
  };
  process.on('SIGINT', endEarly);
  process.once('SIGTERM', interrupted);
  try {
    await workload.pods.createNamespace();
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
    const ticker = setInterval(() => {
      const violations = [...checker.violations].map(([k, v]) => `${k} ${v.length}`).join(', ');
      progress(
        `soak: ${workload.stats.completed} lifecycles, ${injected.size} kinds injected; violations: ${violations || 'none'}`,
      );
    }, 30_000);
    const sampling = sampleWhile(checker, () => running);
    const injected = new Set<FaultKind>();
    const end = began + options.minutes * 60_000;
    const hardEnd = began + 3 * options.minutes * 60_000;
    const everyKindDone = () => options.faults.every((kind) => injected.has(kind));
    const wanting = () =>
      (options.everyFault && !everyKindDone()) || workload.stats.completed < options.atLeast;
    const goOn = () => !ending && (Date.now() < end || (wanting() && Date.now() < hardEnd));
    const faulting = injectFaults({
      faults: new Faults({ stack, workload, random, checker }),
      checker,
      stack,
      options,
      random,
      began,
      // Only while lifecycles begin: a fault in the lanes' last lifecycles may wait for work that
      // never comes (a pause point on an offer no new pod makes: CI, seed 1494988740).
      running: () => running && goOn() && workload.stats.started < options.lifecycles,
      injected,
    });
    await workload.run(options.lifecycles, options.inFlight, goOn);
    running = false;
    clearInterval(ticker);
    const faults = await faulting;
    await sampling;
    progress(
      `soak: workload done (${workload.stats.completed} lifecycles, ${faults.length} faults); draining`,
    );
    await deleteLeftPods(workload);
    const leftAtEnd = await finalConvergence(checker);
    // An operator's reset of the pool (before its rebuild) may make an idle reservation again.
    const poolResets = faults
      .filter((f) => f.kind === 'operator-reset' && f.target.includes('pool/'))
      .map((f) => began + f.at);
    const answerHistory = judgeAnswers(answers.file, checker, poolResets);
    const histories = await checkHistories(stack.client, stack.taskQueue);
    for (const task of histories.failedTasks.stuck)
      checker.violation({
        invariant: 'workflow-task-failed',
        subject: task,
        detail: task,
        workflows: [task.split('@')[0] ?? ''],
      });
    for (const crash of stack.crashes)
      checker.violation({ invariant: 'crashed', subject: crash, detail: crash, workflows: [] });
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
      unlistedLeases: checker.unlisted,
      violations: Object.fromEntries(
        INVARIANTS.map((i) => [i, checker.violations.get(i)?.length ?? 0]),
      ) as Record<Invariant, number>,
      findings,
      leftAtEnd,
      answerHistory,
      replayed: histories.replayed,
      replayErrors: histories.replayErrors,
      recoveredTasks: histories.failedTasks.recovered,
      sdkUpdateOrder: histories.sdkUpdateOrder,
      thawCrashes: [...stack.thawCrashes],
    };
  } finally {
    process.off('SIGINT', endEarly);
    process.off('SIGTERM', interrupted);
    await stack.stop(workload.sandboxes.values());
    closeSync(log);
  }
}
