// A refused ADD says why, to the runtime and on the pod: a tiny pool is exhausted through the real
// cnitool and shim against a node agent process with a kubernetes section. The refused ADD's CNI
// error is code 100 with a msg that starts with `pool-exhausted`, and the agent writes a Warning
// Event on the pod (read back from the real kube-apiserver) with that msg as its message; the
// same pod refused again patches that Event's count instead of adding a second one.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PoolSpecSchema } from '../../domain/config';
import { poolCapacity } from '../../domain/pool-use';
import { cniSetup, cnitool, type CniSetup } from '../harness/cnitool';
import { kubeconfigPath } from '../harness/kube';
import { netconf } from '../harness/netconf';
import { deleteAllNetns, makeNetns, type TestNetns } from '../harness/netns';
import { startNodeAgentProcess, type AgentCniPaths, type NodeAgentProcess } from '../harness/node-agent';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { cniArgs, podCall, runShim, type PodRef } from '../harness/shim';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { waitFor } from '../../tools/processes';

const node = uniqueName('node');
const network = 'reasons-net';
/** One /30 block of IPv4: a couple of addresses, then nothing. */
const TINY = PoolSpecSchema.parse({
  name: uniqueName('tiny'),
  cidrs: ['198.51.100.0/30'],
  blockSize: { ipv4: 30, ipv6: 120 },
});
const dir = mkdtempSync(join(tmpdir(), 'netlease-reasons-'));
const paths: AgentCniPaths = { cniSocket: join(dir, 'cni.sock'), deleteQueue: join(dir, 'del-queue') };
let scenario: Scenario;
let agent: NodeAgentProcess;
let setup: CniSetup;

/** The network config of the tiny pool, ipam mode, through this file's agent process. */
const conf = () => ({
  ...netconf({ taskQueue: scenario.temporal.taskQueue, nodeName: node, pool: TINY.name }),
  name: network,
  mode: 'ipam',
  agentSocket: paths.cniSocket,
  deleteQueue: paths.deleteQueue,
});

beforeAll(async () => {
  scenario = await Scenario.create('reasons', { morePools: [TINY] });
  await scenario.cluster.createNode(node);
  const host = await makeNetns('reasons-host');
  agent = startNodeAgentProcess(node, host.name, {}, { taskQueue: scenario.temporal.taskQueue }, paths, {
    kubernetes: { kubeconfig: kubeconfigPath() },
  });
  const started = await waitFor(() => agent.output().includes('"msg":"node agent started"'), 30_000);
  if (!started) throw new Error(`node agent did not start: ${agent.output()}`);
  const plugin = Object.fromEntries(
    Object.entries(conf()).filter(([key]) => key !== 'cniVersion' && key !== 'name'),
  );
  setup = cniSetup({ [network]: { cniVersion: '1.1.0', name: network, plugins: [plugin] } });
}, 60_000);
afterAll(async () => {
  await agent?.stop();
  await scenario?.close();
  await deleteAllNetns();
});

/** A pod object bound to the node, named as the runtime names it in CNI_ARGS. */
async function boundPod(name: string): Promise<PodRef> {
  const uid = await scenario.cluster.createPod(name, node);
  return { namespace: scenario.cluster.namespace, name, uid };
}

/** cnitool ADD for the pod in a sandbox of its own. */
const cnitoolAdd = (pod: PodRef, sandbox: TestNetns) =>
  cnitool(setup, 'add', network, sandbox.path, {
    env: {
      CNI_ARGS: cniArgs({ K8S_POD_NAMESPACE: pod.namespace, K8S_POD_NAME: pod.name, K8S_POD_UID: pod.uid }),
    },
  });

/** The Events the API server holds about this pod. */
async function podEvents(pod: PodRef) {
  const list = await scenario.cluster.clients.core.listNamespacedEvent({
    namespace: pod.namespace,
    fieldSelector: `involvedObject.uid=${pod.uid}`,
  });
  return list.items;
}

test('an exhausted pool: code 100, msg "pool-exhausted: …", and one Warning Event on the pod counting each refusal', async () => {
  const capacity = Number(poolCapacity(TINY, 4));
  expect(capacity).toBeGreaterThan(0);
  const fits: PodRef[] = [];
  for (let i = 0; i < capacity; i++) {
    fits.push(await boundPod(`fits-${i}`));
    const added = await cnitoolAdd(fits[i] as PodRef, await makeNetns('fits'));
    expect({ code: added.exitCode, err: added.stderr }).toEqual({ code: 0, err: '' });
  }

  const pod = await boundPod('refused');
  const sandbox = await makeNetns('refused');
  const first = await cnitoolAdd(pod, sandbox);
  expect(first.exitCode).toBe(1);
  // cnitool prints libcni's error: `plugin type="netlease" failed (add): <msg>; <details>`.
  expect(first.stderr).toMatch(/failed \(add\): pool-exhausted: /);
  const once = await waitForValue(
    () => podEvents(pod),
    (events) => events.length > 0,
    20_000,
  );
  expect(once).toEqual([
    expect.objectContaining({
      type: 'Warning',
      reason: 'PoolExhausted',
      count: 1,
      involvedObject: expect.objectContaining({ kind: 'Pod', name: 'refused', uid: pod.uid }),
    }),
  ]);
  const message = once[0]?.message ?? '';
  expect(message).toMatch(/^pool-exhausted: /);
  expect(first.stderr).toContain(`failed (add): ${message}`);

  // The same pod's ADD again, straight through the shim: the CNI error JSON, and the Event counted.
  const again = await runShim(podCall('ADD', pod, conf()));
  expect(again.exitCode).toBe(1);
  expect(again.json).toMatchObject({ code: 100, msg: message });
  const twice = await waitForValue(
    () => podEvents(pod),
    (events) => events.some((e) => e.count === 2),
    20_000,
  );
  expect(twice.map((e) => ({ reason: e.reason, count: e.count, message: e.message }))).toEqual([
    { reason: 'PoolExhausted', count: 2, message },
  ]);
  // Written in order, so those of the earlier ADDs would be there by now: the pods that got addresses have none.
  for (const fit of fits) expect(await podEvents(fit)).toEqual([]);
  expect(agent.output()).toContain('"reason":"pool-exhausted"'); // the agent's log line names it too
}, 120_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 3); // the leases, the node and the pool
});
