// The node agent started while Temporal does not answer (nothing listens on its address): it
// serves its socket at once instead of exiting; ADD is 11 naming Temporal and its address, STATUS
// 50, a DEL is queued. Once a Temporal server comes up on that address its worker and pre-producer
// connect by themselves, the queued DEL is applied and a ptp ADD succeeds (the agent's own worker
// makes the interface). Real agent process, real shim, real dev server, real veth pair.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { freePort, isAlive, waitFor } from '../../tools/processes';
import { startDevServer, type DevServer } from '../../tools/temporal-server';
import { kubeconfigPath } from '../harness/kube';
import { netconf } from '../harness/netconf';
import { expectReplayed } from '../harness/replay';
import { deleteAllNetns, makeNetns, type TestNetns } from '../harness/netns';
import { startNodeAgentProcess, type AgentCniPaths, type NodeAgentProcess } from '../harness/node-agent';
import { runShim, type ShimCall } from '../harness/shim';
import { runControlWorker, testConfig, uniqueName, type RunningWorker } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const node = uniqueName('node');
const taskQueue = uniqueName('tq-away');
const dir = mkdtempSync(join(tmpdir(), 'netlease-away-'));
const paths: AgentCniPaths = { cniSocket: join(dir, 'cni.sock'), deleteQueue: join(dir, 'del-queue') };
/** The call's own budget: a call that cannot reach Temporal answers within it. */
const CALL_TIMEOUT_S = 3;
let address = '';
let host: TestNetns;
let agent: NodeAgentProcess | undefined;
let server: DevServer | undefined;
let control: RunningWorker | undefined;

beforeAll(async () => {
  address = `127.0.0.1:${await freePort()}`; // nothing listens here yet
  host = await makeNetns('away-host');
});
afterAll(async () => {
  await agent?.stop();
  await control?.stop();
  await server?.stop();
  await deleteAllNetns();
});

const conf = () => ({
  ...netconf({ taskQueue, nodeName: node, extra: { mode: 'ptp', timeoutSeconds: CALL_TIMEOUT_S } }),
  temporal: { address, taskQueue },
  agentSocket: paths.cniSocket,
  deleteQueue: paths.deleteQueue,
});
const call = (command: string, uid: string, pod?: TestNetns): ShimCall => ({
  command,
  containerId: `ctr-${uid}`,
  netns: pod?.path ?? `/var/run/netns/${uid}`,
  ifName: 'eth0',
  args: { K8S_POD_NAMESPACE: 'away', K8S_POD_NAME: uid.slice(0, 8), K8S_POD_UID: uid },
  stdin: conf(),
});
const queued = () => readdirSync(paths.deleteQueue).filter((n) => n.endsWith('.json'));
const said = (msg: string) => agent?.output().includes(`"msg":"${msg}"`) ?? false;

test('started with Temporal away, the agent serves its socket; once Temporal answers it works normally', async () => {
  agent = startNodeAgentProcess(node, host.name, {}, { address, taskQueue }, paths, {
    offerDir: join(dir, 'offers'),
    kubernetes: { kubeconfig: kubeconfigPath() },
    preProduce: { network: 'netlease-test', pool: taskQueue, mode: 'ipam' },
  });
  const running = agent;
  const listening = await waitFor(() => said('CNI API listening') || !isAlive(running.pid), 30_000);
  expect({ listening, alive: isAlive(running.pid) }).toEqual({ listening: true, alive: true });

  const status = await runShim(call('STATUS', randomUUID()));
  expect(status.json).toMatchObject({ code: 50, msg: expect.stringContaining('Temporal') });
  expect(status.json?.details).toContain(address);
  const refused = await runShim(call('ADD', randomUUID(), await makeNetns('pod')));
  expect(refused.json).toMatchObject({ code: 11, msg: expect.stringContaining(`Temporal at ${address}`) });
  const deleted = randomUUID();
  expect((await runShim(call('DEL', deleted))).exitCode).toBe(0);
  expect(queued()).toHaveLength(1);
  expect(said('node agent started')).toBe(false); // its worker has not connected
  expect(isAlive(running.pid)).toBe(true);

  server = await startDevServer({ port: Number(address.split(':')[1]) });
  control = await runControlWorker(testConfig(taskQueue, { temporal: { address, taskQueue } }));
  expect(await waitFor(() => said('node agent started'), 30_000)).toBe(true);
  expect(await waitFor(() => queued().length === 0, 30_000)).toBe(true); // the queued DEL applied
  expect(await waitFor(() => said('pre-producing leases'), 30_000)).toBe(true);

  const uid = randomUUID();
  const pod = await makeNetns('pod');
  const added = await runShim(call('ADD', uid, pod));
  expect(added.json).not.toHaveProperty('code');
  expect((await pod.links()).map((l) => l.ifname)).toContain('eth0'); // made by the agent's worker
  const ready = await waitForValue(
    () => runShim(call('STATUS', uid)),
    (outcome) => outcome.exitCode === 0,
    30_000,
    500,
  );
  expect(ready.json).toBeUndefined();
}, 180_000);

test('histories of this file replay without nondeterminism', async () => {
  const connection = await Connection.connect({ address });
  try {
    await expectReplayed({ client: new Client({ connection }), taskQueue }, 1);
  } finally {
    await connection.close();
  }
});
