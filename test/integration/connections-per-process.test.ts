// Each netlease process reaches Temporal over one connection: the control worker's Worker,
// activities, watches and reconciler schedule share it, and so do the node agent's Worker, CNI
// calls, pre-producer and offers (a Client built on the Worker's NativeConnection). Counted as
// `ss -tnp` counts them: the TCP connections each process has established to Temporal's port,
// once every one of its users has called Temporal (a pod pre-produced, its ADD and DEL). And the
// agent watches its node's pods once: pool selection keeps them from the pre-producer's watch.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopPid } from '../../tools/processes';
import { rssMiB } from '../bench/proc';
import { startControlProcess, untilControlStarted, type ControlProcess } from '../harness/control-process';
import { kubeGet } from '../../tools/kube-apiserver';
import { sampleSum } from '../harness/exposition';
import { apiServerAddress, kubeconfigPath, testCluster, type TestCluster } from '../harness/kube';
import { netconf } from '../harness/netconf';
import { deleteAllNetns, makeNetns } from '../harness/netns';
import { startNodeAgentProcess, type AgentCniPaths, type NodeAgentProcess } from '../harness/node-agent';
import { expectReplayed } from '../harness/replay';
import { podCall, runShim } from '../harness/shim';
import { connectionsTo } from '../harness/tcp-connections';
import { connectTest, temporalAddress, testConfig, uniqueName, type TestTemporal } from '../harness/temporal';
import { leaseOfPod } from '../harness/real-cluster';
import { waitForValue } from '../harness/wait';

const node = uniqueName('one-conn');
const dir = mkdtempSync(join(tmpdir(), 'netlease-one-conn-'));
const paths: AgentCniPaths = { cniSocket: join(dir, 'cni.sock'), deleteQueue: join(dir, 'del-queue') };
const temporalPort = Number(temporalAddress().split(':').at(-1));
let temporal: TestTemporal;
let cluster: TestCluster;
let control: ControlProcess | undefined;
let agent: NodeAgentProcess | undefined;

beforeAll(async () => {
  temporal = await connectTest('one-conn');
  cluster = await testCluster('one-conn');
  const kubernetes = { kubeconfig: kubeconfigPath(), watch: true, reconcileIntervalSeconds: 3600 };
  const config = testConfig(temporal.taskQueue, { kubernetes });
  control = startControlProcess(config, join(dir, 'control.json'));
  await untilControlStarted(control);
  await cluster.createNode(node);
  const host = await makeNetns('one-conn-host');
  agent = startNodeAgentProcess(node, host.name, {}, { taskQueue: temporal.taskQueue }, paths, {
    offerDir: join(dir, 'offers'),
    kubernetes: { kubeconfig: kubeconfigPath() },
    preProduce: { network: 'netlease-test', pool: temporal.taskQueue, mode: 'ipam' },
  });
  const producing = agent;
  await waitForValue(
    async () => producing.output(),
    (out) => out.includes('"msg":"pre-producing leases"'),
    30_000,
    200,
    'the agent pre-producing',
  );
}, 120_000);

afterAll(async () => {
  if (agent) await stopPid(agent.pid);
  if (control) await stopPid(control.pid);
  await deleteAllNetns();
  await cluster?.close();
  await temporal?.close();
});

test('the control worker and the node agent each hold one connection to Temporal', async () => {
  if (!control || !agent) throw new Error('not started');
  // A pod bound to the node: the agent pre-produces its lease (client), offers it (its worker runs
  // the offer), answers its ADD through the shim (the CNI call's client), and the DEL releases it.
  const name = 'one-conn-pod';
  const uid = await cluster.createPod(name, node);
  await waitForValue(
    () => leaseOfPod(temporal, uid),
    (lease) => lease?.phase === 'Produced',
    30_000,
  );
  const conf = {
    ...netconf({ taskQueue: temporal.taskQueue, nodeName: node }),
    agentSocket: paths.cniSocket,
    deleteQueue: paths.deleteQueue,
  };
  const pod = { namespace: cluster.namespace, name, uid };
  expect((await runShim(podCall('ADD', pod, conf))).exitCode).toBe(0);
  expect((await runShim(podCall('DEL', pod, conf))).exitCode).toBe(0);

  const held = {
    control: connectionsTo(control.pid, temporalPort),
    agent: connectionsTo(agent.pid, temporalPort),
  };
  console.log(
    `connections to Temporal: control worker ${held.control} (RSS ${rssMiB(control.pid).toFixed(0)} MiB), ` +
      `node agent ${held.agent} (RSS ${rssMiB(agent.pid).toFixed(0)} MiB)`,
  );
  expect(held).toEqual({ control: 1, agent: 1 });
}, 120_000);

/** The watches of pods the API server holds open now, every client's (its own gauge). */
async function podWatches(): Promise<number> {
  const { users } = JSON.parse(readFileSync(kubeconfigPath(), 'utf8')) as {
    users: Array<{ user: { token?: string } }>;
  };
  const token = users[0]?.user.token ?? '';
  const { status, body } = await kubeGet(`https://${apiServerAddress()}`, token, '/metrics');
  if (status !== 200) throw new Error(`GET /metrics of the API server: HTTP ${status}`);
  return sampleSum(body, 'apiserver_longrunning_requests', { resource: 'pods', verb: 'WATCH' });
}

test("the node agent holds one watch of its node's pods: the pre-producer's, which pool selection shares", async () => {
  if (!agent) throw new Error('not started');
  // The agent's pod watches are open: the pre-producer's produced the pod of the test before, and
  // pool selection's facts open theirs at the agent's start. Counted as what its exit closes.
  const withAgent = await podWatches();
  await stopPid(agent.pid);
  agent = undefined;
  const without = await waitForValue(
    podWatches,
    (n) => n < withAgent,
    10_000,
    100,
    "the agent's watches closed",
  );
  expect(withAgent - without).toBe(1);
}, 60_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(temporal, 2); // the pod's lease and the node's workflow
});
