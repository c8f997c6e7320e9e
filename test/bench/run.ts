// `npm run bench`: host-local, whereabouts and netlease measured in one run, their phases
// interleaved, each through its real executable. Prints one table and the targets; asserts nothing.
// NETLEASE_BENCH_UNTUNED=1 runs the Temporal dev server without the tuning flags (for before/after).
// NETLEASE_BENCH_ONLY=lifecycle runs only the whole-pod-lifecycle rows (after the warm-up).
// NETLEASE_BENCH_TEMPORAL picks the Temporal server(s) (temporal-servers.ts): each in turn, one run.
// NETLEASE_BENCH_WATCH_CONCURRENCY=1 and NETLEASE_BENCH_WATCH_LEADERSHIP=0: the watches as before (stack.ts).
import { mkdtempSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { TemporalConnectionSchema } from '../../domain/config';
import { connectClient } from '../../temporal/connection';
import { ensureProgram, PROGRAMS } from '../../tools/programs';
import { deleteAllNetns, makeNetns } from '../harness/netns';
import { lifecycleReport, report, type Measured } from './report';
import { mergedLifecycles, type LifecycleRows, type Lifecycles, type Row } from './figures';
import { idleCpuPerSecond, lifecycles, netleaseDriver, peerDriver } from './lifecycle';
import { podOps } from './pod-ops';
import { emptyResult, inFlight, merged, sequential } from './phases';
import {
  hostLocal,
  netleaseCold,
  netleasePreProduced,
  whereabouts,
  type BenchPod,
  type Plugin,
} from './plugins';
import { preProducedPods } from './pre-produce';
import { ptpPlugin, ptpPreProducedPlugin } from './ptp-path';
import { openLeases, shimCpuFromGo, shimVersionCpu } from './footprint';
import { rssMiB } from './proc';
import { hopSamples } from './hop-samples';
import { NODE, PTP_NODE, removeDir, startStack, type BenchStack } from './stack';
import { selectedServers, type PersistenceWrites, type TemporalKind } from './temporal-servers';

/** NETLEASE_BENCH_SCALE=0.1: a quick run with a tenth of the calls (figures less stable). */
const SCALE = Number(process.env.NETLEASE_BENCH_SCALE ?? 1) || 1;
const scaled = (n: number) => Math.max(1, Math.round(n * SCALE));
const SEQ_ROUNDS = 4;
const SEQ_PER_ROUND = scaled(50);
const BUSY_ROUNDS = 2;
const BUSY_PER_ROUND = scaled(200);
const LANES = 16;
/** A slow peer stops starting pairs after this long in one 16-in-flight round. */
const BUSY_BUDGET_MS = 45_000;
const PTP_PODS = scaled(30);
const OPEN_LEASES = scaled(2000);
/** Opening stops after this long; the RSS at OPEN_LEASES is then extrapolated. */
const OPEN_BUDGET_MS = 120_000;
/** NETLEASE_BENCH_LIFECYCLES: whole pod lifecycles per plugin, over LIFE_ROUNDS interleaved rounds. */
const LIFECYCLES = scaled(Number(process.env.NETLEASE_BENCH_LIFECYCLES ?? 120) || 120);
const LIFE_ROUNDS = 2;
/** The peers' pods are bound here: no netlease agent watches it, so none pre-produces for them. */
const PEER_NODE = 'bench-node-peers';
const ONLY_LIFECYCLE = process.env.NETLEASE_BENCH_ONLY === 'lifecycle';
/** netlease's lifecycle rows: one with each of these counts of control workers on the task queue. */
const CONTROL_WORKERS = [1, 2];
const PRE_PRODUCED = SEQ_ROUNDS * SEQ_PER_ROUND + BUSY_ROUNDS * BUSY_PER_ROUND + 1;

const say = (line: string) => console.log(`bench: ${line}`);

async function warmUp(plugins: Plugin[]): Promise<void> {
  for (const plugin of plugins) await sequential(plugin, 3);
}

/** The phases, alternating between the plugins round by round; a row per plugin. */
async function interleaved(plugins: Plugin[]): Promise<Row[]> {
  const rows: Row[] = plugins.map((p) => ({ label: p.label, seq: emptyResult(), busy: emptyResult() }));
  for (let round = 1; round <= SEQ_ROUNDS; round++) {
    say(`sequential round ${round}/${SEQ_ROUNDS}`);
    for (const [i, p] of plugins.entries()) {
      const row = rows[i] as Row;
      row.seq = merged(row.seq, await sequential(p, SEQ_PER_ROUND));
    }
  }
  for (let round = 1; round <= BUSY_ROUNDS; round++) {
    say(`${LANES} in flight round ${round}/${BUSY_ROUNDS}`);
    for (const [i, p] of plugins.entries()) {
      const row = rows[i] as Row;
      row.busy = merged(row.busy ?? emptyResult(), await inFlight(p, BUSY_PER_ROUND, LANES, BUSY_BUDGET_MS));
    }
  }
  return rows;
}

/** Whole pod lifecycles, round by round, a row per plugin: the peers', then netlease's. */
async function lifecycleRows(stack: BenchStack, client: Client, peers: Plugin[]): Promise<LifecycleRows> {
  await stack.clients.core.createNode({ body: { metadata: { name: PEER_NODE } } });
  say('idle CPU of the stack, 5 s');
  const idle = await idleCpuPerSecond(stack.pids(), 5000);
  const netlease = (workers: number) => ({
    ...netleaseCold(stack),
    label: `netlease, ${workers} control worker${workers > 1 ? 's' : ''}`,
  });
  const drivers = [
    ...peers.map((p) => peerDriver(p, PEER_NODE)),
    ...CONTROL_WORKERS.map((workers) =>
      netleaseDriver(stack, netlease(workers), client, { node: NODE, workers }),
    ),
  ];
  const rows = new Map<number, Lifecycles>();
  const shape = { count: Math.ceil(LIFECYCLES / LIFE_ROUNDS), lanes: LANES, budgetMs: BUSY_BUDGET_MS };
  for (let round = 1; round <= LIFE_ROUNDS; round++) {
    say(`whole pod lifecycles, ${LANES} in flight, round ${round}/${LIFE_ROUNDS}`);
    for (const [i, driver] of drivers.entries()) {
      // A namespace per row: a row's leases are counted by their pods' namespace.
      const ops = await podOps(stack.clients, `bench-life-${round}-${i}`);
      const result = await lifecycles(driver, ops, () => stack.pids(), shape);
      const sum = rows.get(i);
      rows.set(i, sum ? mergedLifecycles(sum, result) : result);
    }
  }
  return { rows: [...rows.values()], idle };
}

/** Pods whose leases the agent produced, or why there are none. */
async function preProduced(stack: BenchStack, client: Client): Promise<BenchPod[] | string> {
  if (stack.preProduceMissing) return stack.preProduceMissing;
  say(`creating ${PRE_PRODUCED} pods on the node; waiting for their leases to be Produced`);
  const site = { node: NODE, namespace: 'bench-pre', offerDir: stack.offerDir };
  return preProducedPods(stack.clients, client, site, PRE_PRODUCED, 300_000);
}

/** The ptp rows: cold, and pre-produced on the ptp node (root only: network namespaces). */
async function ptpRows(stack: BenchStack, client: Client): Promise<Plugin[]> {
  const cold = await ptpPlugin(stack, PTP_PODS + 1);
  if (!stack.ptp) return [cold];
  say(`creating ${PTP_PODS} pods on the ptp node; waiting for their leases to be Produced and offered`);
  const site = { node: PTP_NODE, namespace: 'bench-ptp', offerDir: stack.ptp.offerDir };
  const pods = await preProducedPods(stack.clients, client, site, PTP_PODS + 1, 120_000);
  if (typeof pods === 'string') {
    say(`ptp pre-produced: not available (${pods})`);
    return [cold];
  }
  const pre = await ptpPreProducedPlugin(stack, pods);
  return pre ? [cold, pre] : [cold];
}

async function measure(stack: BenchStack, client: Client, root: boolean): Promise<Measured> {
  const cold = netleaseCold(stack);
  const peers = [hostLocal(stack.dir), whereabouts(stack), cold];
  say('warming up (3 ADD+DEL each, not counted)');
  await warmUp(peers);
  const prepared = await preProduced(stack, client);
  const pre = typeof prepared === 'string' ? undefined : netleasePreProduced(stack, prepared);
  const plugins = pre ? [...peers.slice(0, 2), pre, cold] : peers;
  const rows = await interleaved(plugins);
  const lives = await lifecycleRows(stack, client, peers.slice(0, 2));
  say(root ? `ptp: ${PTP_PODS} pods, sequential` : 'ptp: skipped (not root: no network namespaces)');
  const ptps = root ? await ptpRows(stack, client) : [];
  for (const ptp of ptps) rows.push({ label: ptp.label, seq: await sequential(ptp, PTP_PODS) });
  say('Temporal hops of one ADD and DEL');
  const hops = await hopSamples(client, [cold, pre, ...ptps]);
  const shimVersion = await shimVersionCpu(200);
  const shimFromGo = await shimCpuFromGo(200);
  const pids = stack.pids();
  const rss = { agent: rssMiB(pids.agent), control: rssMiB(pids.control) };
  say(`opening ${OPEN_LEASES} leases (cold ADDs, no DEL) for the control worker's memory per lease`);
  const open = await openLeases(cold, pids.control, OPEN_LEASES, LANES, OPEN_BUDGET_MS);
  const missing = typeof prepared === 'string' ? prepared : undefined;
  return { rows, lives, missing, hops, shimVersion, shimFromGo, rss, open, lanes: LANES };
}

async function onlyLifecycles(stack: BenchStack, client: Client): Promise<string> {
  const peers = [hostLocal(stack.dir), whereabouts(stack)];
  say('warming up (3 ADD+DEL each, not counted)');
  await warmUp([...peers, netleaseCold(stack)]);
  return lifecycleReport(await lifecycleRows(stack, client, peers), LANES);
}

/** The stack on `server`, the rows (all, or the lifecycle rows only), printed; the stack stopped. */
async function onServer(server: TemporalKind, root: boolean, tuned: boolean): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'netlease-bench-'));
  let stack: BenchStack | undefined;
  let client: Client | undefined;
  let ok = false;
  try {
    const host = root ? await makeNetns('bench-host') : undefined;
    stack = await startStack(dir, host?.name, tuned, server);
    say(`Temporal: ${stack.temporal.label} (${stack.temporal.address})`);
    client = await connectClient(TemporalConnectionSchema.parse({ address: stack.temporal.address }));
    const writesBefore = await stack.temporal.writes?.();
    console.log(
      ONLY_LIFECYCLE ? await onlyLifecycles(stack, client) : report(await measure(stack, client, root)),
    );
    if (writesBefore) console.log(await writesPerLease(stack, client, writesBefore));
    ok = true;
  } finally {
    await client?.connection.close();
    await stack?.stop();
    await deleteAllNetns();
    if (ok) removeDir(dir);
    else console.error(`bench: logs kept in ${dir}`);
  }
}

/** The production server's database writes over the run, per lease workflow the run made. */
async function writesPerLease(stack: BenchStack, client: Client, before: PersistenceWrites): Promise<string> {
  const after = await stack.temporal.writes?.();
  const leases = (await client.workflow.count(`WorkflowType = 'leaseWorkflow'`)).count;
  if (!after || leases === 0) return 'PostgreSQL writes: no lease was made';
  const per = (key: keyof PersistenceWrites) => ((after[key] - before[key]) / leases).toFixed(0);
  return (
    `PostgreSQL writes per lease lifecycle (all workflows' work, every row and warm-up, ${leases} leases): ` +
    `${per('transactions')} transactions, ${per('rows')} rows, ${per('walBytes')} WAL bytes`
  );
}

async function main(): Promise<void> {
  const program = PROGRAMS.find((p) => p.name === 'whereabouts');
  if (program) ensureProgram(program);
  const root = process.getuid?.() === 0;
  const tuned = process.env.NETLEASE_BENCH_UNTUNED !== '1';
  const servers = selectedServers();
  say(
    `${cpus().length} cores, load ${loadavg()[0]?.toFixed(1)}; Temporal: ${servers.map((s) => s.label).join(', ')}`,
  );
  for (const server of servers) await onServer(server, root, tuned);
  say(`load at the end ${loadavg()[0]?.toFixed(1)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
