// Crash safety: the node agent is SIGKILLed between creating the veth pair and configuring it.
// After a restart the attachment converges to exactly one correct interface, not a second pair.
import { randomUUID } from 'node:crypto';
import { globalAddresses, type Link } from '../../kernel/links';
import { PAUSE_ENV } from '../../kernel/failpoint';
import { leaseWorkflowId } from '../../domain/ids';
import { waitFor } from '../../tools/processes';
import { leaseStateQuery } from '../../workflows/lease-messages';
import { finishedAttempt } from '../harness/history';
import { netconf } from '../harness/netconf';
import { deleteAllNetns, hostEnds, makeNetns, type TestNetns } from '../harness/netns';
import {
  runNodeAgent,
  startNodeAgentProcess,
  type NodeAgentProcess,
  type RunningNodeAgent,
} from '../harness/node-agent';
import { runShim } from '../harness/shim';
import { expectReplayed } from '../harness/replay';
import { uniqueName, withControlWorker } from '../harness/temporal';

const node = uniqueName('node');
// A killed agent's attempt is noticed when its 3 s start-to-close timeout passes.
const ctx = withControlWorker('crash', () => ({
  activation: {
    initialIntervalSeconds: 0.5,
    maximumIntervalSeconds: 1,
    maximumAttempts: 5,
    attemptTimeoutSeconds: 3,
  },
}));
// The default policy (a 60-s attempt timeout): a killed agent is noticed by the activation's
// heartbeat timeout (15 s) instead; the soak saw a release wait a minute behind such an attempt.
const heartbeatNode = uniqueName('node-hb');
const defaults = withControlWorker('crash-hb');
let host: TestNetns;
let crashing: NodeAgentProcess | undefined;
let restarted: RunningNodeAgent | undefined;

beforeAll(async () => {
  host = await makeNetns('host');
});
afterAll(async () => {
  await crashing?.stop();
  await restarted?.stop();
  await heartbeatRestarted?.stop();
  await deleteAllNetns();
});
let heartbeatRestarted: RunningNodeAgent | undefined;

const eth0Of = async (pod: TestNetns): Promise<Link | undefined> =>
  (await pod.links()).find((l) => l.ifname === 'eth0');

test('SIGKILL after the veth pair exists: the restarted agent finishes it, one interface, right addresses', async () => {
  crashing = startNodeAgentProcess(node, host.name, { [PAUSE_ENV]: 'veth-created' });
  const uid = randomUUID();
  const pod = await makeNetns('pod');
  const adding = runShim({
    command: 'ADD',
    containerId: `ctr-${uid}`,
    netns: pod.path,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: 'crash', K8S_POD_NAME: `pod-${uid.slice(0, 8)}`, K8S_POD_UID: uid },
    stdin: netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node, extra: { mode: 'ptp' } }),
  });

  const agent = crashing;
  expect(await waitFor(() => agent.output().includes('paused after veth-created'), 30_000)).toBe(true);
  const before = hostEnds(await host.links());
  expect(before).toHaveLength(1);
  const halfMade = await eth0Of(pod);
  expect(halfMade && globalAddresses(halfMade)).toEqual([]); // killed before any address

  process.kill(agent.pid, 'SIGKILL');
  await agent.exited;
  restarted = await runNodeAgent(node, host.name);

  const outcome = await adding;
  expect(outcome.json).not.toHaveProperty('code');
  const state = await ctx.temporal.client.workflow
    .getHandle(leaseWorkflowId(uid, 'eth0'))
    .query(leaseStateQuery);
  expect(state.phase).toBe('Active');
  expect(
    await finishedAttempt(ctx.temporal.client, leaseWorkflowId(uid, 'eth0'), 'activateAttachment'),
  ).toBeGreaterThanOrEqual(2);

  const after = hostEnds(await host.links());
  expect(after.map((l) => l.ifname)).toEqual(before.map((l) => l.ifname));
  expect(after[0]?.ifindex).toBe(before[0]?.ifindex); // the pair was kept, not made again
  const eth0 = await eth0Of(pod);
  expect(eth0?.address).toBe(halfMade?.address);
  expect(eth0?.link_index).toBe(after[0]?.ifindex);
  expect(eth0 && globalAddresses(eth0)).toEqual(
    expect.arrayContaining(state.addresses.map((a) => `${a.address}/${a.prefixLength}`)),
  );
  expect((await pod.links()).map((l) => l.ifname).sort()).toEqual(['eth0', 'lo']);
});

test('with the default 60-s attempt timeout, an agent killed mid-activation costs the 15-s heartbeat timeout', async () => {
  const paused = startNodeAgentProcess(heartbeatNode, host.name, { [PAUSE_ENV]: 'veth-created' });
  const uid = randomUUID();
  const pod = await makeNetns('pod');
  const adding = runShim({
    command: 'ADD',
    containerId: `ctr-${uid}`,
    netns: pod.path,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: 'crash', K8S_POD_NAME: `pod-${uid.slice(0, 8)}`, K8S_POD_UID: uid },
    // Well under the attempt timeout: only a dead attempt noticed sooner lets the ADD succeed.
    stdin: netconf({
      taskQueue: defaults.temporal.taskQueue,
      nodeName: heartbeatNode,
      extra: { mode: 'ptp', timeoutSeconds: 40 },
    }),
  });
  expect(await waitFor(() => paused.output().includes('paused after veth-created'), 30_000)).toBe(true);
  process.kill(paused.pid, 'SIGKILL');
  await paused.exited;
  heartbeatRestarted = await runNodeAgent(heartbeatNode, host.name);
  const outcome = await adding;
  expect(outcome.json).not.toHaveProperty('code');
  const state = await defaults.temporal.client.workflow
    .getHandle(leaseWorkflowId(uid, 'eth0'))
    .query(leaseStateQuery);
  expect(state.phase).toBe('Active');
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(defaults.temporal, 1);
  await expectReplayed(ctx.temporal, 1);
});
