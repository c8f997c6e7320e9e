// netleasectl, the compiled CLI run as a process against the real servers: a node and pods ADDed
// through the control worker, one released, then every command's real output, a consistency check
// that passes, then fails on real inconsistencies (a pod deleted with watchers off, an allocation
// loaded for an owner that is no lease).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { consumeLease } from '../../cni/consume';
import { DataplaneFailure, nodeTaskQueue } from '../../domain/dataplane';
import { termsOf, type ActivatedLinks } from '../../domain/lease';
import type { AddressGrant } from '../../domain/allocation';
import { leaseWorkflowId, nodeWorkflowId, reconcileScheduleId } from '../../domain/ids';
import { LEASE_WORKFLOW_TYPE } from '../../workflows/lease-messages';
import { CANCELLED_REASON } from '../../workflows/lease';
import { programPath } from '../../tools/programs';
import { signalRelease } from '../../temporal/signals';
import { freePort, runToEnd, type Finished } from '../../tools/processes';
import { failingWorkflowTask } from '../../temporal/workflow-task';
import { conflist, NetworkSchema } from '../../worker/agent/install-cni';
import { loadAllocationUpdate } from '../../workflows/node-messages';
import { untilListed } from '../harness/listed';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { quietRuntime, temporalAddress, uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const CLI = join(__dirname, '..', '..', 'cli', 'netleasectl.js');

let scenario: Scenario;
// Watchers off: a deleted pod keeps its lease open until the reconciler runs (hourly here), the
// inconsistency `check` must find.
beforeAll(async () => (scenario = await Scenario.create('ctl', { watch: false, reuseCooldownSeconds: 1 })));
afterAll(async () => scenario?.close());

const node = uniqueName('ctl-node');
const uids: Record<string, string> = {};
const grants: Record<string, AddressGrant[]> = {};
const v4 = (pod: string) => grants[pod]?.find((g) => g.family === 4)?.address ?? '';

/** Runs the real CLI with the scenario's connection flags; stdin is a pipe (not a terminal). */
function ctl(...args: string[]): Promise<Finished> {
  return runToEnd('node', [CLI, ...args, ...connection()]);
}

function connection(): string[] {
  return [...scenario.ctlFlags(), '--ui', 'http://ui.example:8233'];
}

/** The pinned Temporal CLI (what docs/operating.md tells operators to use) against the test server. */
async function temporalCli(...args: string[]): Promise<Finished> {
  const run = await runToEnd(programPath('temporal'), [...args, '--address', temporalAddress()]);
  expect({ args, exitCode: run.exitCode, stderr: run.stderr }).toEqual({ args, exitCode: 0, stderr: '' });
  return run;
}

/** The CLI on a terminal: `script` gives it a pseudo-terminal and types `input` into it. */
function ctlOnTerminal(input: string, ...args: string[]): Promise<Finished> {
  const command = ['node', CLI, ...args, ...connection()]
    .map((a) => `'${a.replace(/'/g, "'\\''")}'`)
    .join(' ');
  return runToEnd('script', ['-qec', command, '/dev/null'], { input });
}

async function json<T>(...args: string[]): Promise<T> {
  const run = await ctl(...args, '-o', 'json');
  expect({ exitCode: run.exitCode, stderr: run.stderr }).toEqual({ exitCode: 0, stderr: '' });
  return JSON.parse(run.stdout) as T;
}

interface LeaseRow {
  workflowId: string;
  pod: string;
  node: string;
  phase: string;
  addresses: string[];
  lastError: string;
  ui: string;
}

beforeAll(async () => {
  const { cluster } = scenario;
  await cluster.createNode(node);
  for (const pod of ['a', 'b', 'c']) {
    uids[pod] = await cluster.createPod(pod, node);
    grants[pod] = await scenario.add(pod, uids[pod] as string, node);
  }
  await signalRelease(scenario.temporal.client, leaseWorkflowId(uids.c as string, 'eth0'), 'test: c is done');
  await scenario.waitForPhase(uids.c as string, 'Released');
  // Once c's address leaves its 1 s cooldown, it goes to the next pod: `ip` shows both holders.
  const coolingUntil = async () => (await scenario.table(node))?.cooldowns[v4('c')];
  expect(await coolingUntil()).toBeGreaterThan(0); // cooling now: the wait below is for something
  await waitForValue(
    coolingUntil,
    (until) => until !== undefined && until <= Date.now(),
    10_000,
    50,
    `${v4('c')} to leave its cooldown`,
  );
  uids.d = await cluster.createPod('d', node);
  grants.d = await scenario.add('d', uids.d, node);
}, 120_000);

test('the released address went to the next pod (the setting the ip test needs)', () => {
  expect(v4('d')).toBe(v4('c'));
});

test('usage errors name the argument and exit 2, before connecting', async () => {
  const phase = await runToEnd('node', [CLI, 'leases', '--phase', 'Nope', '--address', '127.0.0.1:1']);
  expect(phase.exitCode).toBe(2);
  expect(phase.stderr).toContain('--phase:');
  const unknown = await runToEnd('node', [CLI, 'frobnicate']);
  expect(unknown.exitCode).toBe(2);
  expect(unknown.stderr).toContain('unknown command "frobnicate"');
  const address = await runToEnd('node', [CLI, 'ip', 'not-an-ip', '--address', '127.0.0.1:1']);
  expect(address.exitCode).toBe(2);
  expect(address.stderr).toContain('<address>: not an IPv4 or IPv6 address');
  const reason = await runToEnd('node', [CLI, 'release', 'lease/x/eth0', '--address', '127.0.0.1:1']);
  expect(reason.exitCode).toBe(2);
  expect(reason.stderr).toContain('--reason:');
  const option = await runToEnd('node', [CLI, 'nodes', '--phase', 'Active', '--address', '127.0.0.1:1']);
  expect(option.exitCode).toBe(2);
  expect(option.stderr).toContain('--phase: not an option of "nodes"');
});

test('with Temporal not there, one line names the address, within seconds', async () => {
  const timed = async (address: string) => {
    const started = Date.now();
    const run = await runToEnd('node', [CLI, 'leases', '--address', address]);
    return { ...run, seconds: (Date.now() - started) / 1000 };
  };
  const hint =
    'is it running, and is that its address? (--address, or temporal.address in --config / NETLEASE_CONFIG)';
  const closed = `127.0.0.1:${await freePort()}`;
  const refused = await timed(closed);
  expect(refused.stderr).toBe(
    `netleasectl: Temporal at ${closed} does not answer (connection refused); ${hint}\n`,
  );
  expect(refused.exitCode).toBe(1);
  expect(refused.seconds).toBeLessThan(4); // node's start-up and one refused connection
  // A port that accepts TCP and never says a word: the 4 s deadline, not the SDK's 10 s.
  const sockets = new Set<Socket>();
  const silent = createServer((socket) => sockets.add(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const port = (silent.address() as { port: number }).port;
  try {
    const mute = await timed(`127.0.0.1:${port}`);
    expect(mute.stderr).toBe(
      `netleasectl: Temporal at 127.0.0.1:${port} does not answer (no answer within 4 s); ${hint}\n`,
    );
    expect(mute.exitCode).toBe(1);
    expect(mute.seconds).toBeLessThan(8);
  } finally {
    for (const socket of sockets) socket.destroy();
    silent.close();
  }
});

test('leases: a table row per open lease, filters, -o json', async () => {
  const table = await ctl('leases');
  expect(table.exitCode).toBe(0);
  const lines = table.stdout.trim().split('\n');
  expect(lines[0]).toMatch(/^POD\s+IF\s+NODE\s+PHASE\s+ADDRESSES\s+AGE\s+LAST ERROR\s+UI$/);
  expect(lines).toHaveLength(4); // a, b, d; c is closed
  const ns = scenario.cluster.namespace;
  for (const pod of ['a', 'b', 'd']) {
    const row = lines.find((l) => l.startsWith(`${ns}/${pod} `));
    expect(row).toContain(`eth0  ${node}  Active`);
    expect(row).toContain(v4(pod));
    expect(row).toContain(
      `http://ui.example:8233/namespaces/default/workflows/${encodeURIComponent(leaseWorkflowId(uids[pod] as string, 'eth0'))}`,
    );
  }

  const rows = await json<LeaseRow[]>('leases');
  expect(rows.map((r) => r.pod).sort()).toEqual(['a', 'b', 'd'].map((p) => `${ns}/${p}`));
  expect(rows.every((r) => r.node === node && r.phase === 'Active' && r.addresses.length === 2)).toBe(true);

  expect((await json<LeaseRow[]>('leases', '--pod', `${ns}/b`)).map((r) => r.workflowId)).toEqual([
    leaseWorkflowId(uids.b as string, 'eth0'),
  ]);
  expect(await json<LeaseRow[]>('leases', '--node', 'no-such-node')).toEqual([]);
  expect((await json<LeaseRow[]>('leases', '--node', node)).length).toBe(3);
  const releasedText = await ctl('leases', '--phase', 'Released');
  expect(releasedText.stdout.trim().split('\n')[1]).toMatch(
    new RegExp(`^${ns}/c\\s+eth0\\s+${node}\\s+Released\\s`),
  );
  const released = await json<LeaseRow[]>('leases', '--phase', 'Released');
  expect(released.map((r) => [r.pod, r.phase])).toEqual([[`${ns}/c`, 'Released']]);
  expect((await json<LeaseRow[]>('leases', '--phase', 'Running')).length).toBe(0);
});

interface LeaseView {
  workflowId: string;
  open: boolean;
  state: {
    phase: string;
    addresses: AddressGrant[];
    attachments: Array<{ containerId: string; status: string }>;
  };
  phases: Array<{ phase: string; at: string }>;
}

test('lease: by pod, by ip and by workflow id, with attachments and phase history', async () => {
  const ns = scenario.cluster.namespace;
  const byPod = await json<LeaseView>('lease', `${ns}/a`);
  expect(byPod.workflowId).toBe(leaseWorkflowId(uids.a as string, 'eth0'));
  expect(byPod.state.phase).toBe('Active');
  expect(byPod.state.addresses).toEqual(grants.a);
  expect(byPod.state.attachments).toEqual([expect.objectContaining({ status: 'active' })]);
  // A phase left in the same workflow task is not listed (one-add-path runs): a cold ipam ADD is
  // produced, claimed and active in the lease's first task.
  expect(byPod.phases.map((p) => p.phase)).toEqual(['Producing', 'Active']);
  const times = byPod.phases.map((p) => Date.parse(p.at));
  expect(times.every((t, i) => !Number.isNaN(t) && (i === 0 || t >= (times[i - 1] as number)))).toBe(true);

  expect((await json<LeaseView>('lease', v4('b'))).workflowId).toBe(
    leaseWorkflowId(uids.b as string, 'eth0'),
  );
  // c's old address is d's now: the open lease wins over the closed one.
  expect((await json<LeaseView>('lease', v4('c'))).workflowId).toBe(
    leaseWorkflowId(uids.d as string, 'eth0'),
  );
  const byId = await json<LeaseView>('lease', leaseWorkflowId(uids.c as string, 'eth0'));
  expect(byId.open).toBe(false);
  // Nothing on the node to wait for (ipam): Releasing and Released come in one task, Released listed.
  expect(byId.phases.map((p) => p.phase).slice(-2)).toEqual(['Active', 'Released']);

  const text = await ctl('lease', `${ns}/a`);
  expect(text.exitCode).toBe(0);
  expect(text.stdout).toMatch(/^Lease:\s+lease\//);
  expect(text.stdout).toContain('Attachments:');
  expect(text.stdout).toMatch(/Phase history:\nTIME\s+PHASE\s+ADDRESSES\n\S+Z\s+Producing/);

  const none = await ctl('lease', 'lease/no-such-pod/eth0');
  expect(none.exitCode).toBe(1);
  expect(none.stderr).toContain('no lease on task queue');
});

test('ip: the current holder and the previous one, with times', async () => {
  const view = await json<{
    current: Array<{ owner: string; node: string }>;
    history: Array<{ owner: string; pod: string; allocated: string; released: string }>;
  }>('ip', v4('c'));
  const [c, d] = [leaseWorkflowId(uids.c as string, 'eth0'), leaseWorkflowId(uids.d as string, 'eth0')];
  expect(view.current).toEqual([expect.objectContaining({ owner: d, node })]);
  expect(view.history.map((h) => h.owner)).toEqual([c, d]);
  const [before, now] = view.history as [(typeof view.history)[0], (typeof view.history)[0]];
  expect(before.pod).toBe(`${scenario.cluster.namespace}/c`);
  expect(Date.parse(before.allocated)).toBeLessThan(Date.parse(before.released));
  expect(Date.parse(before.released)).toBeLessThanOrEqual(Date.parse(now.allocated));
  expect(now.released).toBe('');

  const text = await ctl('ip', v4('c'));
  expect(text.stdout).toContain(`Held by ${d}`);
  expect(text.stdout).toMatch(/OWNER\s+POD\s+UID\s+NODE\s+SANDBOX\s+ALLOCATED\s+RELEASED\s+HOW/);
});

interface Holder {
  owner: string;
  pod: string;
  podUid: string;
  node: string;
  sandboxes: string[];
  allocated: string;
  released: string;
}

test('ip --history: every holder with pod, uid, node, sandbox, from and to, and how far back it reaches', async () => {
  const view = await json<{ history: Holder[]; reachesBack: string }>('ip', v4('c'), '--history');
  const [c, d] = view.history as [Holder, Holder];
  expect(view.history).toHaveLength(2);
  expect(c).toMatchObject({ pod: `${scenario.cluster.namespace}/c`, podUid: uids.c, node });
  expect(d).toMatchObject({ pod: `${scenario.cluster.namespace}/d`, podUid: uids.d, node, released: '' });
  const dSandbox = (await scenario.leaseState(uids.d as string)).attachments.map((a) => a.containerId);
  expect(d.sandboxes).toEqual(dSandbox);
  expect(c.sandboxes).toHaveLength(1);
  expect(c.sandboxes[0]).not.toBe(d.sandboxes[0]);
  // The dev server keeps closed runs for a day: the horizon is about a day ago.
  expect(Date.now() - Date.parse(view.reachesBack)).toBeGreaterThan(3_600_000);
  const text = await ctl('ip', v4('c'), '--history');
  expect(text.stdout).toContain('Histories reach back to');
});

test('ip --at: the pod that held the address at that moment, nobody before, unknown past the horizon', async () => {
  const { history } = await json<{ history: Holder[] }>('ip', v4('c'), '--history');
  const [c, d] = history as [Holder, Holder];
  const between = (from: string, to: string) =>
    new Date((Date.parse(from) + Date.parse(to)) / 2).toISOString();
  const at = async (moment: string) =>
    json<{ holders: Holder[]; unknown: boolean }>('ip', v4('c'), '--at', moment);
  expect((await at(between(c.allocated, c.released))).holders).toEqual([c]);
  expect((await at(c.allocated)).holders).toEqual([c]); // from is inclusive, to exclusive
  expect((await at(c.released)).holders).toEqual([]);
  expect((await at(new Date(Date.parse(d.allocated) + 1).toISOString())).holders).toEqual([d]);
  const before = await at(new Date(Date.parse(c.allocated) - 60_000).toISOString());
  expect(before).toMatchObject({ holders: [], unknown: false });
  const text = await ctl('ip', v4('c'), '--at', between(c.allocated, c.released));
  expect(text.stdout).toContain(
    `Held by pod ${scenario.cluster.namespace}/c (uid ${uids.c}) on node ${node}`,
  );
  // A year ago is before the kept history: not "nobody", unknown, exit 1.
  const longAgo = await ctl('ip', v4('c'), '--at', '2025-11-27T00:00:00Z');
  expect(longAgo.exitCode).toBe(1);
  expect(longAgo.stdout).toContain('Unknown: that is before the kept history');
});

test('ip --at and --history refuse bad input by name, before connecting', async () => {
  const offline = ['--address', '127.0.0.1:1'];
  const garbage = await runToEnd('node', [CLI, 'ip', '198.18.0.1', '--at', 'yesterday', ...offline]);
  expect({ exitCode: garbage.exitCode, stderr: garbage.stderr }).toEqual({
    exitCode: 2,
    stderr: expect.stringContaining('--at: must be a time with its zone'),
  });
  const noZone = await runToEnd('node', [CLI, 'ip', '198.18.0.1', '--at', '2026-11-27T14:05:00', ...offline]);
  expect(noZone.exitCode).toBe(2);
  const both = await runToEnd('node', [
    CLI,
    'ip',
    '198.18.0.1',
    '--at',
    '2026-11-27T14:05:00Z',
    '--history',
    ...offline,
  ]);
  expect(both.exitCode).toBe(2);
  expect(both.stderr).toContain('--at and --history: one or the other');
});

test('nodes and pools: incarnation, blocks, used/free/cooling', async () => {
  const nodes = await json<
    Array<{
      name: string;
      incarnation: string;
      blocks: Array<{ used: number }>;
      used: number;
      free: number;
    }>
  >('nodes');
  expect(nodes).toHaveLength(1);
  const [view] = nodes as [(typeof nodes)[0]];
  expect(view.name).toBe(node);
  expect(view.incarnation).toBe((await scenario.nodeState(node)).incarnation);
  expect(view.incarnation).not.toBe('');
  expect(view.blocks).toHaveLength(2); // one IPv4 /26, one IPv6 /120
  expect(view.used).toBe(6); // a, b, d: two addresses each
  // /26: 62 usable - gateway = 61; /120: 255 (no broadcast in IPv6... usable range) - gateway
  expect(view.free).toBeGreaterThan(250);

  const pools =
    await json<Array<{ name: string; blocks: unknown[]; nodes: string[]; used: number }>>('pools');
  expect(pools).toEqual([
    expect.objectContaining({ name: scenario.temporal.taskQueue, nodes: [node], used: 6, leaked: 0 }),
  ]);
  // Per family, as a NetleasePool's status has them: a /16 of /26 blocks, 61 addresses each.
  expect(pools[0]).toMatchObject({
    families: [
      { family: 4, capacity: 1024 * 61, allocated: 3, leaked: 0 },
      { family: 6, allocated: 3, leaked: 0 },
    ],
  });
  expect(pools[0]?.blocks).toHaveLength(2);

  const poolsText = await ctl('pools');
  expect(poolsText.stdout).toMatch(
    new RegExp(
      `^POOL\\s+CIDRS\\s+BLOCKS\\s+NODES\\s+USED\\s+FREE\\s+COOLING\\s+LEAKED\\s+CAPACITY\\n${scenario.temporal.taskQueue}\\s+198\\.18\\.0\\.0/16,fd00:18::/64\\s+2\\s+1\\s+6\\s`,
    ),
  );

  const text = await ctl('nodes');
  expect(text.stdout).toMatch(
    new RegExp(`^NODE\\s+INCARNATION\\s+RETIRED\\s+BLOCKS\\s+USED\\s+FREE\\s+COOLING\\n${node}\\s`),
  );
});

test('connection settings from the control config (--config or NETLEASE_CONFIG); a bad one names the file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'netleasectl-'));
  const file = join(dir, 'control.json');
  writeFileSync(file, JSON.stringify(scenario.config));
  const env = { ...process.env, NETLEASE_CONFIG: file };
  const byEnv = await runToEnd('node', [CLI, 'leases', '--node', node], { env });
  expect(byEnv.exitCode).toBe(0);
  expect(byEnv.stdout.trim().split('\n')).toHaveLength(4);
  const byFlag = await runToEnd('node', [CLI, 'check', '--config', file]);
  expect(byFlag.stdout).toContain('checked pods: 3 open leases'); // the config's kubeconfig
  expect(byFlag.exitCode).toBe(0);
  const missing = await runToEnd('node', [CLI, 'nodes', '--config', join(dir, 'nope.yaml')]);
  expect(missing.exitCode).toBe(2);
  expect(missing.stderr).toContain(`cannot read config ${join(dir, 'nope.yaml')}`);
  rmSync(dir, { recursive: true, force: true });
});

test('check passes on a consistent cluster', async () => {
  const run = await ctl('check');
  expect(run.stdout).toContain('OK: no problems found');
  expect(run.exitCode).toBe(0);
});

test('check: a lease made by hand is a note, and so is one the reconciler is about to release', async () => {
  const { temporal } = scenario;
  // The ADDs by hand of docs/try-it.md: without K8S_POD_UID (cnitool), and with a UID no pod has.
  const hand = (podUid: string, podName: string) => ({
    podUid,
    podNamespace: podName ? 'default' : '',
    podName,
    ifName: 'eth0',
    nodeName: node,
    pool: temporal.taskQueue,
    mode: 'ipam' as const,
  });
  const byHand = [hand(`ctr-${randomUUID()}`, ''), hand(randomUUID(), 'demo')];
  for (const start of byHand)
    await consumeLease(temporal.client, temporal.taskQueue, start, {
      containerId: `demo-${start.podUid.slice(-8)}`,
      netns: '/var/run/netns/demo',
      ifName: 'eth0',
      terms: termsOf(start),
    });
  await untilListed(temporal.client, temporal.taskQueue, (leases) =>
    byHand.every((s) => leases.some((l) => l.podUid === s.podUid)),
  );
  const [cnitool, noPod] = byHand.map((s) => leaseWorkflowId(s.podUid, 'eth0')) as [string, string];
  const run = await ctl('check');
  expect(run.stdout).toContain(
    `NOTE [pods] ${cnitool} (pod ${byHand[0]?.podUid}, phase Active) was made by hand without K8S_POD_UID: no pod to check; it is kept until released by hand`,
  );
  // The scenario's reconciler runs hourly: a problem only if still open two intervals on.
  expect(run.stdout).toMatch(
    new RegExp(
      `NOTE \\[pods\\] ${noPod} \\(pod default/demo, phase Active\\): pending release: no pod has UID \\S+; the reconciler releases it \\(a problem if still open at \\S+Z\\)`,
    ),
  );
  expect(run.stdout).toContain('OK: no problems found');
  expect(run.exitCode).toBe(0);
  for (const id of [cnitool, noPod]) await signalRelease(temporal.client, id, 'test: done by hand');
  for (const s of byHand) await scenario.waitForPhase(s.podUid, 'Released');
});

/** The lease of a new pod on the test's node, Active; its workflow id. */
async function activeLease(pod: string): Promise<string> {
  uids[pod] = await scenario.cluster.createPod(pod, node);
  grants[pod] = await scenario.add(pod, uids[pod] as string, node);
  return leaseWorkflowId(uids[pod] as string, 'eth0');
}
const ownsAddresses = async (workflowId: string) =>
  Object.values((await scenario.table(node))?.allocations ?? {}).some((a) => a.owner === workflowId);

test('release with {} or no input through the Temporal CLI is ignored: the lease keeps working, a good release ends it', async () => {
  const id = await activeLease('e');
  await temporalCli('workflow', 'signal', '-w', id, '--name', 'release', '--input', '{}');
  await temporalCli('workflow', 'signal', '-w', id, '--name', 'release');
  // Both processed (a note in the current details), no workflow task failed, nothing released.
  await scenario.waitForPhase(uids.e as string, 'Active');
  const handle = scenario.temporal.client.workflow.getHandle(id);
  await waitForValue(
    async () =>
      (await handle.fetchHistory()).events?.filter((e) => e.workflowExecutionSignaledEventAttributes).length,
    (n) => n === 2,
    15_000,
  );
  expect(await failingWorkflowTask(scenario.temporal.client, id)).toBeUndefined();
  const events = (await handle.fetchHistory()).events ?? [];
  expect(events.filter((e) => e.workflowTaskFailedEventAttributes)).toHaveLength(0);
  expect(await ownsAddresses(id)).toBe(true);
  const view = await ctl('lease', id);
  expect(view.stdout).toMatch(/Workflow task:\s+ok\n/);
  expect(view.stdout).toMatch(/Phase:\s+Active\n/);

  await temporalCli('workflow', 'signal', '-w', id, '--name', 'release', '--input', '{"reason":"manual"}');
  expect((await scenario.waitForPhase(uids.e as string, 'Released')).releaseReason).toBe('manual');
  expect(await ownsAddresses(id)).toBe(false);
});

test('cancel through the Temporal CLI releases the lease: Released, addresses returned, completed', async () => {
  const id = await activeLease('f');
  await temporalCli('workflow', 'cancel', '-w', id);
  const state = await scenario.waitForPhase(uids.f as string, 'Released');
  expect(state.releaseReason).toBe(CANCELLED_REASON);
  expect((await scenario.temporal.client.workflow.getHandle(id).describe()).status.name).toBe('COMPLETED');
  expect(await ownsAddresses(id)).toBe(false);
});

test('check flags a lease whose workflow task keeps failing, and `lease` shows it', async () => {
  // Started by hand without its input: the workflow cannot even read its pod UID, so every
  // workflow task fails (a TypeError in the worker), as any bug or nondeterminism would.
  const id = leaseWorkflowId(randomUUID(), 'eth0');
  await temporalCli(
    'workflow',
    'start',
    '--type',
    LEASE_WORKFLOW_TYPE,
    '--task-queue',
    scenario.temporal.taskQueue,
    '-w',
    id,
  );
  try {
    const task = await waitForValue(
      () => failingWorkflowTask(scenario.temporal.client, id),
      (t) => t !== undefined,
      30_000,
      250,
    );
    expect(task?.failure).toMatch(/podUid/);
    await untilListed(scenario.temporal.client, scenario.temporal.taskQueue, (leases) =>
      leases.some((l) => l.workflowId === id),
    );
    const run = await ctl('check');
    expect(run.stdout).toMatch(
      new RegExp(
        `PROBLEM \\[tasks\\] ${id} \\(pod -, phase -\\) does not move: its workflow task has failed \\d+ time\\(s\\): .*podUid.*\\. Remedy: .*temporal workflow reset --workflow-id <id> --type LastWorkflowTask`,
      ),
    );
    expect(run.stdout).toContain('1 problem(s) found');
    expect(run.exitCode).toBe(1);
    const view = await ctl('lease', id);
    expect(view.stdout).toMatch(
      /Workflow task:\s+FAILING \(\d+ failure\(s\)\): .*podUid.*; the lease does not move/,
    );
  } finally {
    await temporalCli('workflow', 'terminate', '-w', id, '--reason', 'test: started without its input');
  }
}, 60_000);

test('check --node-agent-config: a preProduce that does not match its conflist is a problem', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'netleasectl-agent-'));
  const conflistPath = join(dir, '10-netlease.conflist');
  writeFileSync(conflistPath, JSON.stringify(conflist(NetworkSchema.parse({ name: 'net-b', mode: 'ptp' }))));
  const agentConfig = (network: string) => {
    const file = join(dir, `${network}.yaml`);
    const preProduce = { network, pool: 'default', mode: 'ptp', conflist: conflistPath };
    writeFileSync(file, JSON.stringify({ kubernetes: {}, preProduce }));
    return file;
  };
  try {
    const agrees = await ctl('check', '--node-agent-config', agentConfig('net-b'));
    expect(agrees.stdout).toContain(
      `checked conflist: ${join(dir, 'net-b.yaml')}'s preProduce against ${conflistPath}`,
    );
    expect(agrees.stdout).toContain('OK: no problems found');
    expect(agrees.exitCode).toBe(0);

    const differs = await ctl('check', '--node-agent-config', agentConfig('net-a'));
    expect(differs.stdout).toContain(
      `PROBLEM [conflist] preProduce differs from ${conflistPath} in network: preProduce is network net-a (ptp, pool default, eth0), the conflist network net-b (ptp, pool default, eth0)`,
    );
    expect(differs.stdout).toContain('1 problem(s) found');
    expect(differs.exitCode).toBe(1);

    const missing = await ctl('check', '--node-agent-config', join(dir, 'nope.yaml'));
    expect(missing.stderr).toContain(`cannot read config ${join(dir, 'nope.yaml')}`);
    expect(missing.exitCode).toBe(2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('retry of a lease that is not parked says so and exits 1', async () => {
  const run = await ctl('retry', `${scenario.cluster.namespace}/a`);
  expect(run.exitCode).toBe(1);
  expect(run.stderr).toContain('is Active, not parked in ActivationFailed: nothing to retry');
});

test('retry: a parked lease (its activation failed) is listed with its error and activates again', async () => {
  const { cluster, temporal } = scenario;
  const parkNode = uniqueName('ctl-park');
  await cluster.createNode(parkNode);
  const uid = await cluster.createPod('p', parkNode);
  // The node agent's task queue served by a test double: activation fails until `failing` is off.
  let failing = true;
  quietRuntime();
  const connection = await NativeConnection.connect({ address: temporalAddress() });
  const worker = await Worker.create({
    connection,
    taskQueue: nodeTaskQueue(parkNode),
    activities: {
      async activateAttachment(): Promise<ActivatedLinks> {
        if (failing)
          throw ApplicationFailure.nonRetryable('test: the netns is gone', DataplaneFailure.invalidInput);
        return {
          host: { name: 'nlh-test', mac: '02:00:00:00:00:01' },
          container: { name: 'eth0', mac: '02:00:00:00:00:02', sandbox: '/var/run/netns/p' },
        };
      },
      async deactivateAttachment(): Promise<void> {},
    },
  });
  const running = worker.run();
  try {
    const start = {
      podUid: uid,
      podNamespace: cluster.namespace,
      podName: 'p',
      ifName: 'eth0',
      nodeName: parkNode,
      pool: temporal.taskQueue,
      mode: 'ptp' as const,
    };
    const consume = {
      containerId: 'ctr-park',
      netns: '/var/run/netns/p',
      ifName: 'eth0',
      terms: termsOf(start),
    };
    await expect(consumeLease(temporal.client, temporal.taskQueue, start, consume)).rejects.toThrow();
    await scenario.waitForPhase(uid, 'ActivationFailed');
    // The phase filter reads the LeasePhase search attribute, indexed a moment after the upsert.
    await untilListed(temporal.client, temporal.taskQueue, (leases) =>
      leases.some((l) => l.podUid === uid && l.phase === 'ActivationFailed'),
    );

    const parked = await ctl('leases', '--phase', 'ActivationFailed');
    expect(parked.stdout.trim().split('\n')[1]).toMatch(
      new RegExp(`^${cluster.namespace}/p\\s+eth0\\s+${parkNode}\\s+ActivationFailed\\s`),
    );
    const [row] = await json<LeaseRow[]>('leases', '--phase', 'ActivationFailed');
    expect(row?.lastError).toContain('test: the netns is gone');
    failing = false;
    const retried = await ctl('retry', `${cluster.namespace}/p`);
    expect(retried.stdout).toContain(`retry sent to ${leaseWorkflowId(uid, 'eth0')}: 1 parked attachment(s)`);
    expect(retried.exitCode).toBe(0);
    const state = await scenario.waitForPhase(uid, 'Active');
    expect(state.attachments).toEqual([
      expect.objectContaining({ containerId: 'ctr-park', status: 'active' }),
    ]);
    const view = await json<LeaseView>('lease', `${cluster.namespace}/p`);
    expect(view.phases.map((p) => p.phase)).toEqual([
      'Producing',
      'Activating',
      'ActivationFailed',
      'Activating',
      'Active',
    ]);
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
  }
}, 120_000);

test('release: refuses without --yes and a terminal, releases with --yes', async () => {
  const ns = scenario.cluster.namespace;
  const refused = await ctl('release', `${ns}/b`, '--reason', 'operator test');
  expect(refused.exitCode).toBe(2);
  expect(refused.stderr).toContain(`pod ${ns}/b (uid ${uids.b}) exists: refusing to release`);
  expect(refused.stderr).toContain('pass --yes');
  expect(refused.stderr).not.toContain('--help');
  expect((await scenario.leaseState(uids.b as string)).phase).toBe('Active');

  const released = await ctl('release', `${ns}/b`, '--reason', 'operator test', '--yes');
  expect(released.exitCode).toBe(0);
  expect(released.stdout).toContain('release sent to');
  const state = await scenario.waitForPhase(uids.b as string, 'Released');
  expect(state.releaseReason).toBe('netleasectl: operator test');
});

test('release on a terminal asks first: "n" keeps the lease, "y" releases it', async () => {
  const ns = scenario.cluster.namespace;
  const kept = await ctlOnTerminal('n\n', 'release', `${ns}/d`, '--reason', 'operator test');
  expect(kept.stdout).toContain(`pod ${ns}/d (uid ${uids.d}) exists; releasing`);
  expect(kept.stdout).toContain('Release? [y/N]');
  expect(kept.stdout).toContain('not released');
  expect(kept.exitCode).toBe(1);
  expect((await scenario.leaseState(uids.d as string)).phase).toBe('Active');

  const released = await ctlOnTerminal('y\n', 'release', `${ns}/d`, '--reason', 'operator test');
  expect(released.stdout).toContain('release sent to');
  expect(released.exitCode).toBe(0);
  await scenario.waitForPhase(uids.d as string, 'Released');
});

test('check fails, naming each problem, on real inconsistencies', async () => {
  // A pod deleted while watchers are off: its lease stays open.
  await scenario.cluster.deletePod('a');
  // An allocation loaded for an owner that is no lease.
  const table = await scenario.table(node);
  const block = table?.blocks.find((b) => b.family === 4);
  const ghost = (block?.cidr ?? '').replace(/\.\d+\/\d+$/, '.50');
  await scenario.temporal.client.workflow
    .getHandle(nodeWorkflowId(node))
    .executeUpdate(loadAllocationUpdate, {
      args: [
        {
          pool: scenario.config.pools[0] as (typeof scenario.config.pools)[0],
          allocation: {
            address: ghost,
            family: 4,
            block: block?.cidr ?? '',
            owner: 'lease/ghost/eth0',
            podUid: 'ghost',
            incarnation: block?.incarnation ?? '',
          },
        },
      ],
    });
  const leaseA = `${leaseWorkflowId(uids.a as string, 'eth0')} (pod ${scenario.cluster.namespace}/a, phase Active)`;
  // The hourly reconciler will release a's lease: pending, not a problem while it runs...
  const pending = await ctl('check');
  expect(pending.stdout).toContain(`NOTE [pods] ${leaseA}: pending release: no pod has UID ${uids.a}`);
  expect(pending.stdout).toContain('1 problem(s) found');
  // ...but with its schedule paused nothing will.
  const schedule = scenario.temporal.client.schedule.getHandle(
    reconcileScheduleId(scenario.temporal.taskQueue),
  );
  await schedule.pause('test: no reconciler');
  const run = await ctl('check');
  expect(run.exitCode).toBe(1);
  expect(run.stdout).toContain(
    `PROBLEM [pods] ${leaseA} is open, but no pod has UID ${uids.a}, and the reconciler's schedule ${reconcileScheduleId(scenario.temporal.taskQueue)} is paused`,
  );
  expect(run.stdout).toContain(
    `PROBLEM [addresses] ${ghost} on node ${node} is held by lease/ghost/eth0, which is not an open lease`,
  );
  expect(run.stdout).toContain('2 problem(s) found');
  const parsed = JSON.parse((await ctl('check', '-o', 'json')).stdout) as {
    ok: boolean;
    problems: unknown[];
  };
  expect(parsed.ok).toBe(false);
  expect(parsed.problems).toHaveLength(2);
});

test('histories of this file replay without nondeterminism', async () => {
  // 8 leases (and the failing one), the node, the pool (and the reconcile schedule's first run).
  await expectReplayed(scenario.temporal, 10);
});
