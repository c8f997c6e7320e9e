// The static shim and the node agent's CNI API: VERSION answered by the shim alone; with the agent
// down, ADD and CHECK get 11 naming the socket, STATUS 50, and DEL is queued on disk and applied
// once the agent is back, nothing lost across a SIGKILL; with Temporal away, the agent queues
// DELs itself. The agent here is the real process (node dist/worker/agent/node-agent.js).
import { existsSync, mkdirSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { leaseWorkflowId } from '../../domain/ids';
import { leaseStateQuery } from '../../workflows/lease-messages';
import { netconf } from '../harness/netconf';
import { deleteAllNetns, makeNetns } from '../harness/netns';
import { startNodeAgentProcess, type AgentCniPaths, type NodeAgentProcess } from '../harness/node-agent';
import { expectReplayed } from '../harness/replay';
import { runShim, type ShimCall } from '../harness/shim';
import { tcpProxy } from '../harness/tcp-proxy';
import { temporalAddress, uniqueName, withControlWorker } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { waitFor } from '../../tools/processes';
import { serveCniApi } from '../../worker/agent/cni-api';
import { createLog } from '../../observability/log';

const node = uniqueName('node');
const ctx = withControlWorker('cni-shim');
const dir = mkdtempSync(join(tmpdir(), 'netlease-shim-'));
const paths: AgentCniPaths = { cniSocket: join(dir, 'agent.sock'), deleteQueue: join(dir, 'del-queue') };
let agent: NodeAgentProcess | undefined;
let hostNetns = '';

beforeAll(async () => (hostNetns = (await makeNetns('shim-host')).name));
afterAll(async () => {
  await agent?.stop();
  await deleteAllNetns();
});

/** An agent process, once its socket listens or (with `until`) once `until` holds. */
async function startAgent(until?: () => boolean): Promise<NodeAgentProcess> {
  const started = startNodeAgentProcess(node, hostNetns, {}, undefined, paths);
  const ready = await waitFor(
    () => (until ? until() : started.output().includes('"msg":"CNI API listening"')),
    30_000,
    5,
  );
  if (!ready) throw new Error(`node agent did not start: ${started.output()}`);
  return started;
}

const conf = (temporal: Record<string, string> = {}) => {
  const base = netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node });
  return {
    ...base,
    agentSocket: paths.cniSocket,
    deleteQueue: paths.deleteQueue,
    temporal: { ...(base.temporal as object), ...temporal },
  };
};
const call = (command: string, uid: string, stdin: unknown = conf()): ShimCall => ({
  command,
  containerId: `ctr-${uid}`,
  netns: `/var/run/netns/${uid}`,
  ifName: 'eth0',
  args: { K8S_POD_NAMESPACE: 'shim', K8S_POD_NAME: uid.slice(0, 8), K8S_POD_UID: uid },
  stdin,
});
const attachmentsOf = (uid: string) =>
  ctx.temporal.client.workflow
    .getHandle(leaseWorkflowId(uid, 'eth0'))
    .query(leaseStateQuery)
    .then((s) => s.attachments);
const queued = () =>
  existsSync(paths.deleteQueue) ? readdirSync(paths.deleteQueue).filter((n) => n.endsWith('.json')) : [];

test('VERSION is answered by the shim with no agent at all', async () => {
  const outcome = await runShim({ command: 'VERSION', stdin: { cniVersion: '0.4.0' } });
  expect(outcome.exitCode).toBe(0);
  expect(outcome.json).toEqual({
    cniVersion: '0.4.0',
    supportedVersions: ['0.3.1', '0.4.0', '1.0.0', '1.1.0'],
  });
});

test('agent down: ADD and CHECK 11 naming the socket, STATUS 50, DELs queued and applied after SIGKILLs', async () => {
  agent = await startAgent();
  // Six DELs in the queue: the agent killed after applying the first still has some left.
  const pods = Array.from({ length: 6 }, () => randomUUID());
  for (const uid of pods) expect((await runShim(call('ADD', uid))).exitCode).toBe(0);

  process.kill(agent.pid, 'SIGKILL');
  await agent.exited;
  const add = await runShim(call('ADD', randomUUID()));
  expect(add.json).toMatchObject({ code: 11, msg: expect.stringContaining(paths.cniSocket) });
  expect((await runShim(call('CHECK', pods[0] as string))).json).toMatchObject({ code: 11 });
  expect((await runShim(call('STATUS', pods[0] as string))).json).toMatchObject({ code: 50 });
  for (const uid of pods) expect((await runShim(call('DEL', uid))).exitCode).toBe(0);
  expect(queued()).toHaveLength(pods.length);
  for (const uid of pods) expect(await attachmentsOf(uid)).toHaveLength(1); // nothing applied yet

  // An agent killed mid-queue, as soon as it applied the first queued DEL, loses nothing: the
  // next one applies the rest (a DEL applied twice is a no-op).
  const killed = await startAgent(() => queued().length < pods.length);
  process.kill(killed.pid, 'SIGKILL');
  expect((await killed.ended).signal).toBe('SIGKILL'); // killed, not exited after its drain
  const leftByKilled = queued().length;
  expect(leftByKilled).toBeGreaterThan(0); // DELs were still queued when it died...
  expect(leftByKilled).toBeLessThan(pods.length); // ...after it had applied one
  expect(killed.output()).not.toContain('"msg":"queued DELs applied"'); // its drain never finished
  agent = await startAgent();
  expect(await waitFor(() => queued().length === 0, 30_000)).toBe(true);
  for (const uid of pods) expect(await attachmentsOf(uid)).toEqual([]);
  expect(agent.output()).toMatch(new RegExp(`"applied":${leftByKilled},.*"msg":"queued DELs applied"`));
}, 120_000);

const DEL_DEADLINE_S = 3;

test('Temporal away: the agent queues the DEL, answers success, and applies it when Temporal is back', async () => {
  const proxy = await tcpProxy(temporalAddress());
  const uid = randomUUID();
  const through = { ...conf({ address: proxy.address }), timeoutSeconds: DEL_DEADLINE_S };
  expect((await runShim(call('ADD', uid, through))).exitCode).toBe(0);
  await proxy.cut();
  const del = await runShim(call('DEL', uid, through));
  expect(del.exitCode).toBe(0);
  // Answered within the call's own deadline: the client's retries do not outlast it. (The log
  // line is written asynchronously: the answer on the socket may overtake it.)
  const queuedLine = () =>
    agent
      ?.output()
      .split('\n')
      .find((line) => line.includes('cni DEL queued') && line.includes(uid));
  expect(await waitFor(() => queuedLine() !== undefined, 5_000)).toBe(true);
  const logged = JSON.parse(queuedLine() ?? '{}') as { podUid?: string; durationMs?: number };
  expect(logged).toMatchObject({ podUid: uid, queued: true });
  expect(logged.durationMs).toBeLessThan(DEL_DEADLINE_S * 1000 + 500);
  expect(queued()).toHaveLength(1);
  expect(await attachmentsOf(uid)).toHaveLength(1);
  await proxy.restore();
  const attachments = await waitForValue(
    () => attachmentsOf(uid),
    (a) => a.length === 0,
    30_000,
    250,
  );
  expect(attachments).toEqual([]);
  // The queued file is removed only after the DEL it holds has been applied.
  expect(await waitFor(() => queued().length === 0, 10_000)).toBe(true);
  await proxy.close();
}, 120_000);

test('an entry of the DEL queue that cannot be read nor removed does not stop the DELs behind it', async () => {
  const own = mkdtempSync(join(tmpdir(), 'netlease-drain-'));
  const queue = join(own, 'del-queue');
  const damaged = '00000000000000000000-damaged.json'; // first in the queue's order
  mkdirSync(join(queue, damaged), { recursive: true }); // a directory: unreadable, not removable by rm
  const lines: string[] = [];
  const log = createLog('test', 'info', { write: (line: string) => void lines.push(line) });
  const api = await serveCniApi({ socket: join(own, 'agent.sock'), deleteQueue: queue, log });
  try {
    // A DEL the shim queues while nothing listens on its socket, behind the damaged entry.
    const gone = { ...conf(), agentSocket: join(own, 'nobody.sock'), deleteQueue: queue };
    expect((await runShim(call('DEL', randomUUID(), gone))).exitCode).toBe(0);
    await api.drain(); // (the timer's drain may come first: either applies it)
    expect(readdirSync(queue).filter((n) => n.endsWith('.json'))).toEqual([damaged]);
    expect(lines.some((l) => l.includes('"applied":1') && l.includes('queued DELs applied'))).toBe(true);
    expect(lines.some((l) => l.includes(damaged) && l.includes('cannot be removed'))).toBe(true);
  } finally {
    await api.close();
  }
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(ctx.temporal, 4);
});
