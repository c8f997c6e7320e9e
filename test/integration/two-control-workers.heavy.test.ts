// Two control worker processes on one task queue and one pool, pod lifecycles through the real shim
// and the CNI API: both workers run workflow tasks, and a SIGKILL of one with 16 lifecycles in
// flight costs only latency: every lifecycle completes, every lease ends Released, no address is
// held twice, nothing fails, every history replays. The pool and node workflows whose sticky queue
// was the killed worker's are served by the other; how long they waited is printed.
import { mkdtempSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { addressOwnershipFindings } from '../../domain/address-ownership';
import type { LeaseState } from '../../domain/lease';
import { leaseWorkflowId, nodeWorkflowId, poolWorkflowId, watchLeaseName } from '../../domain/ids';
import { stopPid } from '../../tools/processes';
import type { CniApi } from '../../worker/agent/cni-api';
import type { leaseWorkflow } from '../../workflows/lease';
import { nodeStateQuery } from '../../workflows/node-messages';
import { CniResultSchema } from '../harness/cni-result';
import { startControlProcess, untilControlStarted, type ControlProcess } from '../harness/control-process';
import { kubeconfigPath, testCluster, type TestCluster } from '../harness/kube';
import { netconf } from '../harness/netconf';
import { expectReplayed } from '../harness/replay';
import { inBatches, podCall, runShim } from '../harness/shim';
import { connectTest, serveTestCniApi, testConfig, uniqueName, type TestTemporal } from '../harness/temporal';
import { nodeAddressEvents } from '../../temporal/histories';
import {
  handover,
  historyOf,
  signalsIn,
  stickiness,
  tasksByWorker,
  timeoutsIn,
  workerAt,
  type Handover,
} from '../harness/worker-tasks';

const LANES = 16;
/** Lifecycles with both workers up, then with one killed when the KILL_AT-th starts (16 in flight). */
const SHARED = 32;
const UNDER_KILL = 48;
const KILL_AT = 24;
const NODES = 3;
const RELEASE_DEADLINE_MS = 120_000;
/** The watch Lease's duration: a killed holder's watches move within it. */
const WATCH_LEASE_S = 5;

let temporal: TestTemporal;
let cluster: TestCluster;
let cni: CniApi | undefined;
const workers: ControlProcess[] = [];
const nodes = Array.from({ length: NODES }, () => uniqueName('tw'));
/** Its first block is asked of the pool only after the kill. */
const lateNode = uniqueName('tw-late');

beforeAll(async () => {
  temporal = await connectTest('two-workers');
  cluster = await testCluster('two-workers');
  const dir = mkdtempSync(join(tmpdir(), 'netlease-two-workers-'));
  const config = testConfig(temporal.taskQueue, {
    reuseCooldownSeconds: 1,
    kubernetes: {
      kubeconfig: kubeconfigPath(),
      watch: true,
      reconcileIntervalSeconds: 3600,
      watchLeadership: { durationSeconds: WATCH_LEASE_S },
    },
  });
  for (const name of ['a', 'b']) workers.push(startControlProcess(config, join(dir, `control-${name}.json`)));
  await Promise.all(workers.map((w) => untilControlStarted(w)));
  cni = await serveTestCniApi(temporal.taskQueue);
  for (const node of [...nodes, lateNode]) await cluster.createNode(node);
}, 120_000);

afterAll(async () => {
  await cni?.close();
  for (const w of workers) await stopPid(w.pid);
  await cluster?.close();
  await temporal?.close();
});

/** What each pod's ADD answered, by lease id (the node's allocation owner). */
const answered = new Map<string, string[]>();

/**
 * From the node workflows' own histories: an address allocated to a second owner before its first
 * owner's release (a repeated allocation to the same owner is the idempotent answer to a retry),
 * and the owners each address was allocated to. (Not the lease's close: a lease returns its
 * addresses, which may go to the next pod after the cooldown, before its last workflow task.)
 */
async function allocations(nodeNames: string[]) {
  const twice: string[] = [];
  const owners = new Map<string, Set<string>>();
  for (const node of nodeNames) {
    const owner = new Map<string, string>();
    for (const e of await nodeAddressEvents(temporal.client, node)) {
      if (e.kind === 'allocate') owners.set(e.owner, (owners.get(e.owner) ?? new Set()).add(e.address));
      const held = owner.get(e.address);
      if (e.kind === 'release' && held === e.owner) owner.delete(e.address);
      if (e.kind !== 'allocate') continue;
      if (held && held !== e.owner)
        twice.push(`${node} ${e.address}: ${held}, then ${e.owner} at ${e.at.toISOString()}`);
      owner.set(e.address, e.owner);
    }
  }
  return { twice, owners };
}

async function settled(uid: string): Promise<LeaseState> {
  const handle = temporal.client.workflow.getHandle<typeof leaseWorkflow>(leaseWorkflowId(uid, 'eth0'));
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`lease of ${uid} open after ${RELEASE_DEADLINE_MS} ms`)),
      RELEASE_DEADLINE_MS,
    );
  });
  try {
    return await Promise.race([handle.result(), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

async function shim(
  command: 'ADD' | 'DEL',
  pod: { namespace: string; name: string; uid: string },
  node: string,
) {
  const conf = netconf({ taskQueue: temporal.taskQueue, nodeName: node, extra: { timeoutSeconds: 120 } });
  const out = await runShim(podCall(command, pod, conf));
  if (out.exitCode !== 0)
    throw new Error(`${command} ${pod.name}: exit ${out.exitCode} ${out.stdout}${out.stderr}`);
  return out;
}

/** Created and bound, ADD, Running, deleted, DEL, removed, lease Released (as the watchers see it). */
async function lifecycle(name: string, node: string): Promise<{ uid: string; ms: number }> {
  const started = performance.now();
  const uid = await cluster.createPod(name, node);
  const pod = { namespace: cluster.namespace, name, uid };
  const added = CniResultSchema.parse((await shim('ADD', pod, node)).json);
  const addresses = added.ips.map((ip) => ip.address.split('/')[0] as string);
  answered.set(leaseWorkflowId(uid, 'eth0'), addresses);
  await cluster.setPodPhase(name, 'Running');
  await cluster.deletePod(name, 'graceful');
  await shim('DEL', pod, node);
  await cluster.deletePod(name);
  const state = await settled(uid);
  if (state.phase !== 'Released') throw new Error(`lease of ${name} ended ${state.phase}`);
  return { uid, ms: performance.now() - started };
}

interface Round {
  uids: string[];
  ms: number[];
  failures: string[];
  seconds: number;
}

/** `count` lifecycles, LANES in flight; `onStart(i, running)` as the i-th (from 0) starts. */
async function round(
  prefix: string,
  count: number,
  nodeOf: (i: number) => string,
  onStart: (i: number, running: number) => void = () => undefined,
) {
  const result: Round = { uids: [], ms: [], failures: [], seconds: 0 };
  const started = performance.now();
  let running = 0;
  const tasks = Array.from({ length: count }, (_, i) => async () => {
    onStart(i, ++running);
    try {
      const { uid, ms } = await lifecycle(`${prefix}-${i}`, nodeOf(i));
      result.uids.push(uid);
      result.ms.push(ms);
    } catch (err) {
      result.failures.push(err instanceof Error ? err.message : String(err));
    }
    running--;
  });
  await inBatches(tasks, LANES);
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) * p)] ?? NaN;
const figures = (r: Round) =>
  `${r.uids.length} lifecycles in ${r.seconds.toFixed(1)} s (${(r.uids.length / r.seconds).toFixed(1)}/s), ` +
  `p50 ${percentile(r.ms, 0.5).toFixed(0)} ms, p99 ${percentile(r.ms, 0.99).toFixed(0)} ms, max ${Math.max(...r.ms).toFixed(0)} ms`;

/** Workflow tasks of these leases completed, by worker identity. */
async function leaseTasksByWorker(uids: string[]): Promise<Map<string, number>> {
  const total = new Map<string, number>();
  for (const uid of uids)
    for (const [id, n] of tasksByWorker(await historyOf(temporal.client, leaseWorkflowId(uid, 'eth0'))))
      total.set(id, (total.get(id) ?? 0) + n);
  return total;
}

/** Workflow task timeouts, activity retries, lost stickiness and signals in these leases' histories, summed. */
async function leaseTimeouts(uids: string[]): Promise<string> {
  const total = new Map<string, number>();
  const add = (kind: string, n: number) => total.set(kind, (total.get(kind) ?? 0) + n);
  for (const uid of uids) {
    const history = await historyOf(temporal.client, leaseWorkflowId(uid, 'eth0'));
    for (const [kind, n] of timeoutsIn(history)) add(kind, n);
    for (const [kind, n] of signalsIn(history)) add(`signal ${kind}`, n);
    const { normalAfterFirst, switches } = stickiness(history);
    add('tasks on the normal queue after the first', normalAfterFirst);
    add('worker switches', switches);
  }
  return JSON.stringify([...total]);
}

let shared: Round;

/** The control worker that holds the watch Lease (kubernetes/leadership), as the Lease names it. */
async function watchHolder(): Promise<string | undefined> {
  const api = cluster.clients.config.makeApiClient(cluster.clients.kube.CoordinationV1Api);
  const lease = await api.readNamespacedLease({
    name: watchLeaseName(temporal.taskQueue),
    namespace: 'default',
  });
  return lease.spec?.holderIdentity;
}

const leaseIdentity = (w: ControlProcess) => `${hostname()}-${w.pid}`;

test('two control workers on one task queue both run workflow tasks', async () => {
  shared = await round('shared', SHARED, (i) => nodes[i % NODES] as string);
  expect(shared.failures).toEqual([]);
  const byWorker = await leaseTasksByWorker(shared.uids);
  console.log(
    `both workers: ${figures(shared)}; lease workflow tasks by worker: ${JSON.stringify([...byWorker])}; ` +
      `timeouts: ${await leaseTimeouts(shared.uids)}`,
  );
  for (const w of workers) expect(byWorker.get(w.identity) ?? 0).toBeGreaterThan(SHARED / 2);
  // Both run workflow tasks, one runs the watches: the Lease names one of them.
  expect(workers.map(leaseIdentity)).toContain(await watchHolder());
}, 300_000);

test('a SIGKILL of one worker with 16 lifecycles in flight costs only latency', async () => {
  const pool = poolWorkflowId(temporal.taskQueue);
  // The victim holds the pool workflow's sticky queue, so the pool must move to the survivor.
  const poolWorker = workerAt(await historyOf(temporal.client, pool), Date.now());
  const victim = workers.find((w) => w.identity === poolWorker) as ControlProcess;
  const survivor = workers.find((w) => w !== victim) as ControlProcess;
  expect(victim).toBeDefined();
  const watchedBefore = await watchHolder();
  let killedAt = 0;
  let inFlightAtKill = 0;
  const underKill = await round(
    'kill',
    UNDER_KILL,
    (i) => (i >= KILL_AT && i % 4 === 0 ? lateNode : (nodes[i % NODES] as string)),
    (i, running) => {
      if (i !== KILL_AT) return;
      inFlightAtKill = running;
      killedAt = Date.now();
      process.kill(victim.pid, 'SIGKILL');
    },
  );
  expect(underKill.failures).toEqual([]);
  expect(inFlightAtKill).toBeGreaterThanOrEqual(LANES);
  expect(await victim.exited).toBeNull();
  console.log(
    `one killed at #${KILL_AT} (${inFlightAtKill} in flight): ${figures(underKill)}; before: ${figures(shared)}`,
  );

  console.log(`timeouts in the leases' histories: ${await leaseTimeouts(underKill.uids)}`);

  const moved: Record<string, Handover | undefined> = {};
  for (const id of [pool, ...[...nodes, lateNode].map(nodeWorkflowId)]) {
    const history = await historyOf(temporal.client, id);
    if (workerAt(history, killedAt) === victim.identity)
      moved[id] = handover(history, victim.identity, survivor.identity, killedAt);
  }
  console.log(`workflows of the killed worker, served by the survivor: ${JSON.stringify(moved)}`);
  expect(moved[pool]?.completed).toBeGreaterThan(0);
  for (const [id, h] of Object.entries(moved)) expect([id, (h?.completed ?? 0) > 0]).toEqual([id, true]);
  // The watches are the survivor's now, whichever held them before the kill.
  const moves = watchedBefore === leaseIdentity(victim) ? 'moved from the victim' : 'stayed';
  console.log(`watch Lease: ${watchedBefore} before the kill, ${moves}`);
  expect(await watchHolder()).toBe(leaseIdentity(survivor));
}, 600_000);

test('nothing failed, no address held twice or left held, every history replays', async () => {
  const tq = temporal.taskQueue;
  const count = async (more: string) =>
    (await temporal.client.workflow.count(`TaskQueue = '${tq}' AND ${more}`)).count;
  expect(await count("ExecutionStatus = 'Completed'")).toBeGreaterThanOrEqual(SHARED + UNDER_KILL);
  const bad =
    "ExecutionStatus != 'Completed' AND ExecutionStatus != 'Running' AND ExecutionStatus != 'ContinuedAsNew'";
  expect(await count(bad)).toBe(0);
  const tables = await Promise.all(
    [...nodes, lateNode].map(async (node) => ({
      node,
      tables: (await temporal.client.workflow.getHandle(nodeWorkflowId(node)).query(nodeStateQuery)).tables,
    })),
  );
  expect(addressOwnershipFindings(tables, [])).toEqual([]);
  const { twice, owners } = await allocations([...nodes, lateNode]);
  expect(twice).toEqual([]);
  // Every ADD's answer is what the node's history allocated to that lease: the check saw them all.
  expect(answered.size).toBe(SHARED + UNDER_KILL);
  const notAllocated = [...answered].filter(([lease, addresses]) =>
    addresses.some((a) => !owners.get(lease)?.has(a)),
  );
  expect(notAllocated).toEqual([]);
  for (const { tables: byPool } of tables) expect(byPool[tq]?.allocations).toEqual({});
  await expectReplayed(temporal, SHARED + UNDER_KILL);
}, 300_000);
