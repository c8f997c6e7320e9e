// The operator's console: the real control worker and node agent processes with metrics on, a few
// CNI calls through the real shim, then /metrics scraped (values, promtool, a real Prometheus) and
// every stdout line checked to be one JSON event.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { leaseWorkflowId } from '../../domain/ids';
import { signalPodRunning, signalRelease } from '../../temporal/signals';
import { retrySignal } from '../../workflows/lease-messages';
import { freePort, startTracked, stopPid, waitFor, type Tracked } from '../../tools/processes';
import { sampleSum, sampleValue, scrape } from '../harness/exposition';
import { testCluster, kubeconfigPath, type TestCluster } from '../harness/kube';
import { netconf } from '../harness/netconf';
import { promtoolCheck, startPrometheus, type PrometheusServer } from '../harness/prometheus';
import { expectReplayed } from '../harness/replay';
import { runShim, type ShimCall } from '../harness/shim';
import { temporalAddress, uniqueName } from '../harness/temporal';

const dist = join(__dirname, '..', '..');
const taskQueue = uniqueName('tq-obs');
const node = uniqueName('node');
const dir = mkdtempSync(join(tmpdir(), 'netlease-obs-'));
const cniSocket = join(dir, 'cni.sock');
const deleteQueue = join(dir, 'del-queue');

interface Proc extends Tracked {
  stdout(): string;
  stderr(): string;
}

function startProcess(entry: string, name: string, config: unknown): Proc {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(config));
  const tracked = startTracked(process.execPath, [join(dist, 'worker', entry), '--config', file], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  tracked.child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  tracked.child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  return { ...tracked, stdout: () => out, stderr: () => err };
}

let cluster: TestCluster;
let control: Proc | undefined;
let agent: Proc | undefined;
let prometheus: PrometheusServer | undefined;
let controlPort = 0;
let agentPort = 0;
const pods: Record<'ok' | 'broken', { name: string; uid: string }> = {
  ok: { name: uniqueName('ok'), uid: '' },
  broken: { name: uniqueName('broken'), uid: '' },
};

beforeAll(async () => {
  cluster = await testCluster('obs');
  await cluster.createNode(node);
  for (const pod of Object.values(pods)) pod.uid = await cluster.createPod(pod.name, node);
  [controlPort, agentPort] = [await freePort(), await freePort()];
  const temporal = { address: temporalAddress(), taskQueue };
  control = startProcess('control/control.js', 'control', {
    temporal,
    pools: [{ name: taskQueue, cidrs: ['198.18.0.0/16', 'fd00:18::/64'] }],
    activation: {
      initialIntervalSeconds: 0.2,
      maximumIntervalSeconds: 0.5,
      maximumAttempts: 3,
      attemptTimeoutSeconds: 5,
    },
    kubernetes: { kubeconfig: kubeconfigPath(), reconcileIntervalSeconds: 60 },
    metrics: { port: controlPort, sampleIntervalSeconds: 1 },
  });
  agent = startProcess('agent/node-agent.js', 'node-agent', {
    temporal,
    nodeName: node,
    cniSocket,
    deleteQueue,
    offerDir: join(dir, 'offers'),
    kubernetes: { kubeconfig: kubeconfigPath() },
    preProduce: { network: 'netlease-test', pool: taskQueue, mode: 'ipam', ifName: 'eth0' },
    metrics: { port: agentPort },
  });
  const answers = (port: number) => () =>
    scrape(port).then(
      () => true,
      () => false,
    );
  expect(await waitFor(answers(controlPort), 60_000, 200)).toBe(true);
  expect(await waitFor(answers(agentPort), 60_000, 200)).toBe(true);
});

afterAll(async () => {
  // NETLEASE_OBS_DUMP=<dir>: keep both processes' output and a scrape of each (for docs).
  const dump = process.env.NETLEASE_OBS_DUMP;
  if (dump) {
    writeFileSync(join(dump, 'control.log'), control?.stdout() ?? '');
    writeFileSync(join(dump, 'node-agent.log'), agent?.stdout() ?? '');
    writeFileSync(join(dump, 'control.prom'), await scrape(controlPort).catch(String));
    writeFileSync(join(dump, 'node-agent.prom'), await scrape(agentPort).catch(String));
  }
  await prometheus?.stop();
  for (const proc of [agent, control]) if (proc) await stopPid(proc.pid);
  await cluster?.close();
});

const call = (command: string, pod: { name: string; uid: string }, extra: Partial<ShimCall> = {}) => ({
  command,
  containerId: `ctr-${pod.uid}`,
  netns: `/var/run/netns/nlt-absent-${pod.uid.slice(0, 8)}`, // never made: ptp activation cannot find it
  ifName: 'eth0',
  args: { K8S_POD_NAMESPACE: cluster.namespace, K8S_POD_NAME: pod.name, K8S_POD_UID: pod.uid },
  stdin: netconf({ taskQueue, nodeName: node, extra: { agentSocket: cniSocket, deleteQueue } }),
  ...extra,
});

/** Polls a scrape until `done` holds; returns the last exposition. */
async function scrapeUntil(port: number, done: (text: string) => boolean, timeoutMs = 30_000) {
  let text = '';
  await waitFor(async () => done((text = await scrape(port).catch(() => ''))), timeoutMs, 250);
  return text;
}

const jsonLines = (text: string) =>
  text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`not a JSON log line: ${line.slice(0, 300)}`);
      }
    });

test('CNI calls are counted by verb and code, leases by phase, addresses per pool and node', async () => {
  const add = await runShim(call('ADD', pods.ok));
  expect(add.json).not.toHaveProperty('code');
  expect(add.exitCode).toBe(0);
  // ptp with a namespace that never appears: activation retries, the lease parks, ADD gets 11.
  const parked = await runShim(
    call('ADD', pods.broken, {
      ifName: 'net1',
      stdin: netconf({
        taskQueue,
        nodeName: node,
        extra: { agentSocket: cniSocket, deleteQueue, mode: 'ptp' },
      }),
    }),
  );
  expect(parked.json).toMatchObject({ code: 11 });
  const del = await runShim(call('DEL', pods.ok));
  expect(del.exitCode).toBe(0);

  const agentText = await scrape(agentPort);
  expect(sampleValue(agentText, 'netlease_cni_requests_total', { verb: 'ADD', code: '0' })).toBe(1);
  expect(sampleValue(agentText, 'netlease_cni_requests_total', { verb: 'ADD', code: '11' })).toBe(1);
  expect(sampleValue(agentText, 'netlease_cni_requests_total', { verb: 'DEL', code: '0' })).toBe(1);
  expect(
    sampleValue(agentText, 'netlease_cni_request_duration_seconds_count', { verb: 'ADD', result: 'success' }),
  ).toBe(1);
  expect(sampleValue(agentText, 'netlease_cni_delete_queue_length')).toBe(0);
  expect(
    sampleValue(agentText, 'netlease_cni_refusals_total', { verb: 'ADD', reason: 'activation-failed' }),
  ).toBe(1);
  // Both pods are bound to the node: the agent started their eth0 leases and offered them (held
  // on its disk for their first ADD). The ptp ADD on net1 was cold: its grant was held too, as an
  // offer answered for its sandbox, before the agent tried to make the interface (the one ADD
  // path). The pre-producer runs on its own: its counters are waited on.
  const offered = await scrapeUntil(
    agentPort,
    (text) => sampleValue(text, 'netlease_offer_events_total', { event: 'held' }) === 3,
  );
  expect(sampleValue(offered, 'netlease_offer_events_total', { event: 'held' })).toBe(3);
  expect(sampleValue(offered, 'netlease_preproduced_leases_total', { result: 'started' })).toBe(2);
  expect(agentText).toMatch(/^temporal_\w+/m); // the SDK's own metrics, merged in

  const controlText = await scrapeUntil(
    controlPort,
    (text) =>
      sampleValue(text, 'netlease_leases_parked') === 1 &&
      sampleValue(text, 'netlease_leases', { phase: 'Produced' }) === 2 &&
      (sampleValue(text, 'netlease_reconcile_runs_total', { result: 'ok' }) ?? 0) >= 1,
  );
  expect(sampleValue(controlText, 'netlease_leases', { phase: 'ActivationFailed' })).toBe(1);
  expect(sampleValue(controlText, 'netlease_leases_stalled')).toBe(0);
  // Three leases hold one address per family each: two pre-produced eth0 leases, one parked net1.
  const where = { pool: taskQueue, node };
  expect(sampleValue(controlText, 'netlease_addresses_used', { ...where, family: 'ipv4' })).toBe(3);
  expect(sampleValue(controlText, 'netlease_addresses_used', { ...where, family: 'ipv6' })).toBe(3);
  // One /26 (62 usable, the gateway aside: 61) and one /120 (255 usable, 254).
  expect(sampleValue(controlText, 'netlease_addresses_free', { ...where, family: 'ipv4' })).toBe(61 - 3);
  expect(sampleValue(controlText, 'netlease_addresses_free', { ...where, family: 'ipv6' })).toBe(254 - 3);
  // The config file's pool: its use as the NetleasePool status would count it (a /16 of /26 blocks).
  const pool = (state: string) =>
    sampleValue(controlText, 'netlease_pool_addresses', { pool: taskQueue, family: 'ipv4', state });
  expect(['capacity', 'allocated', 'reserved', 'cooldown', 'leaked'].map(pool)).toEqual([
    1024 * 61,
    3,
    61 - 3,
    0,
    0,
  ]);
  expect(sampleSum(controlText, 'netlease_reconcile_actions_total')).toBeGreaterThanOrEqual(0);
  expect(controlText).toMatch(/^temporal_\w+/m);
});

test('both expositions pass promtool check metrics', async () => {
  for (const port of [agentPort, controlPort]) {
    const checked = await promtoolCheck(await scrape(port));
    expect({ port, exitCode: checked.exitCode, output: checked.stdout + checked.stderr }).toEqual({
      port,
      exitCode: 0,
      output: '',
    });
  }
});

test('a real Prometheus scrapes both ports', async () => {
  prometheus = await startPrometheus([`127.0.0.1:${controlPort}`, `127.0.0.1:${agentPort}`]);
  const server = prometheus;
  const upBoth = async () => {
    const up = await server.query('up');
    return up.length === 2 && up.every((s) => s.value[1] === '1');
  };
  if (!(await waitFor(upBoth, 60_000, 500)))
    throw new Error(`Prometheus never saw both targets up:\n${server.output().slice(-3000)}`);
  const adds = async () =>
    (await server.query('netlease_cni_requests_total{verb="ADD",code="0"}'))[0]?.value[1] === '1';
  expect(await waitFor(adds, 30_000, 500)).toBe(true);
  const parked = async () => (await server.query('netlease_leases_parked'))[0]?.value[1] === '1';
  expect(await waitFor(parked, 30_000, 500)).toBe(true);
});

test("a lease's park, its signals and its release are one log line each, with the lease id", async () => {
  const connection = await Connection.connect({ address: temporalAddress() });
  const client = new Client({ connection });
  const [broken, ok] = [leaseWorkflowId(pods.broken.uid, 'net1'), leaseWorkflowId(pods.ok.uid, 'eth0')];
  const lines = (leaseId: string, msg: string) =>
    jsonLines(control?.stdout() ?? '').filter((l) => l.leaseId === leaseId && String(l.msg).startsWith(msg));
  const until = (leaseId: string, msg: string, count = 1) =>
    waitFor(() => lines(leaseId, msg).length >= count, 30_000, 100);
  try {
    expect(await until(broken, 'lease parked')).toBe(true);
    await client.workflow.getHandle(broken).signal(retrySignal);
    expect(await until(broken, 'retry signal received')).toBe(true);
    expect(await until(broken, 'lease parked', 2)).toBe(true); // the netns is still missing
    await signalPodRunning(client, ok);
    await signalRelease(client, broken, 'test: broken is done');
    expect(await until(broken, 'lease released')).toBe(true);
    expect(await until(ok, 'podRunning signal received')).toBe(true);
  } finally {
    await connection.close();
  }
  const parked = lines(broken, 'lease parked');
  expect(parked).toHaveLength(2);
  expect(parked[0]).toEqual(
    expect.objectContaining({
      level: 'warn',
      msg: 'lease parked in ActivationFailed: send the retry signal once the cause is fixed',
      ifName: 'net1',
      containerId: `ctr-${pods.broken.uid}`,
      error: expect.stringContaining('does not exist'),
    }),
  );
  expect(lines(broken, 'retry signal received')).toEqual([
    expect.objectContaining({ level: 'info', parked: 1, phase: 'ActivationFailed' }),
  ]);
  expect(lines(broken, 'release signal received')).toEqual([
    expect.objectContaining({ level: 'info', reason: 'test: broken is done', phase: 'ActivationFailed' }),
  ]);
  const [released] = lines(broken, 'lease released');
  expect(released).toEqual(expect.objectContaining({ level: 'info', reason: 'test: broken is done' }));
  const addresses = released?.addresses as string[];
  expect(addresses).toHaveLength(2); // one per family
  expect(addresses.some((a) => a.startsWith('198.18.'))).toBe(true);
  expect(lines(ok, 'podRunning signal received')).toEqual([
    expect.objectContaining({ level: 'info', phase: 'Produced' }),
  ]);
});

test('every stdout line is one JSON event; an ADD and a failed attempt are one line each', () => {
  const agentLines = jsonLines(agent?.stdout() ?? '');
  const controlLines = jsonLines(control?.stdout() ?? '');
  for (const line of [...agentLines, ...controlLines]) {
    expect(line).toEqual(
      expect.objectContaining({
        level: expect.any(String),
        time: expect.any(String),
        msg: expect.any(String),
      }),
    );
  }
  const add = agentLines.find((l) => l.msg === 'cni call' && l.verb === 'ADD' && l.code === 0);
  expect(add).toEqual(
    expect.objectContaining({
      proc: 'node-agent',
      level: 'info',
      verb: 'ADD',
      code: 0,
      durationMs: expect.any(Number),
      pod: `${cluster.namespace}/${pods.ok.name}`,
      podUid: pods.ok.uid,
      leaseId: leaseWorkflowId(pods.ok.uid, 'eth0'),
      node,
    }),
  );
  const failedAdd = agentLines.find((l) => l.verb === 'ADD' && l.code === 11);
  expect(failedAdd).toEqual(
    expect.objectContaining({ level: 'warn', error: expect.stringMatching(/activation/) }),
  );
  // The SDK's WARN for a failed activity attempt, shortened: type, attempt, cause; no stack.
  const raw = (agent?.stdout() ?? '').split('\n').filter((l) => l.includes('activity attempt failed'));
  expect(raw.length).toBeGreaterThanOrEqual(2);
  for (const text of raw) {
    expect(text.length).toBeLessThan(1000);
    expect(text).not.toMatch(/\\n\s+at |stack/);
    expect(JSON.parse(text)).toEqual(
      expect.objectContaining({
        level: 'warn',
        activityType: 'activateAttachment',
        attempt: expect.any(Number),
        leaseId: leaseWorkflowId(pods.broken.uid, 'net1'),
        error: expect.stringContaining('does not exist'),
        errorType: 'NetnsMissing',
      }),
    );
  }
  expect(controlLines.some((l) => l.msg === 'reconciled' && typeof l.released === 'number')).toBe(true);
  expect(agent?.stderr()).toBe('');
  expect(control?.stderr()).toBe('');
});

test('histories of this file replay without nondeterminism', async () => {
  const connection = await Connection.connect({ address: temporalAddress() });
  try {
    await expectReplayed({ client: new Client({ connection }), taskQueue }, 3);
  } finally {
    await connection.close();
  }
});

test('a stop is quiet: SIGTERM ends both processes with their "stopped" line and no warning', async () => {
  for (const [proc, stoppedLine] of [
    [control, 'control worker stopped'],
    [agent, 'node agent stopped'],
  ] as const) {
    if (!proc) throw new Error('process not started');
    const before = proc.stdout().length;
    process.kill(proc.pid, 'SIGTERM');
    const exitCode = await proc.exited;
    const said = () => proc.stdout().slice(before);
    // Its last lines may trail its exit: wait for the stopped line, or for the failure's.
    await waitFor(
      () => said().includes(`"msg":"${stoppedLine}"`) || said().includes('"level":"error"'),
      5_000,
    );
    const afterStop = said()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: string; msg: string });
    const complaints = afterStop.filter((l) => l.level === 'warn' || l.level === 'error');
    expect({ exitCode, complaints, stderr: proc.stderr() }).toEqual({
      exitCode: 0,
      complaints: [],
      stderr: '',
    });
    expect(afterStop.map((l) => l.msg)).toContain(stoppedLine);
  }
});
