// Bad input to the ptp plugin through the real executable, with a real node agent: the spec's
// error code, and nothing made (no lease, no allocation, no link) or changed (a live pod stays).
import { randomUUID } from 'node:crypto';
import { leaseWorkflowId } from '../../domain/ids';
import { freePort } from '../../tools/processes';
import { leaseStateQuery } from '../../workflows/lease-messages';
import { expectNoLease } from '../harness/leftovers';
import { netconf } from '../harness/netconf';
import { hostEnds, makeNetns, type TestNetns } from '../harness/netns';
import { withNodeAgent } from '../harness/node-agent';
import { runShim, type ShimCall } from '../harness/shim';
import { expectReplayed } from '../harness/replay';
import { uniqueName, withControlWorker } from '../harness/temporal';

const node = uniqueName('node');
const ctx = withControlWorker('ptp-bad', () => ({
  activation: { initialIntervalSeconds: 0.2, maximumIntervalSeconds: 1, maximumAttempts: 3 },
}));
const dataplane = withNodeAgent(node, undefined, ctx.context);
let live: { uid: string; pod: TestNetns; hostEnd: string };

const ptp = (extra: Record<string, unknown> = {}, cniVersion?: string) =>
  netconf({
    taskQueue: ctx.temporal.taskQueue,
    nodeName: node,
    extra: { mode: 'ptp', ...extra },
    ...(cniVersion ? { cniVersion } : {}),
  });

function call(command: string, uid: string, pod: TestNetns, overrides: Partial<ShimCall> = {}): ShimCall {
  return {
    command,
    containerId: `ctr-${uid}`,
    netns: pod.path,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: 'ptp-bad', K8S_POD_NAME: `pod-${uid.slice(0, 8)}`, K8S_POD_UID: uid },
    stdin: ptp(),
    ...overrides,
  };
}

beforeAll(async () => {
  const uid = randomUUID();
  const pod = await makeNetns('live');
  const added = await runShim(call('ADD', uid, pod));
  expect(added.json).not.toHaveProperty('code');
  const [hostEnd] = hostEnds(await dataplane.host.links());
  live = { uid, pod, hostEnd: hostEnd?.ifname ?? '?' };
});

/** The live pod is untouched: still Active, its eth0 and host end still there and the only ones. */
async function expectLivePodIntact(): Promise<void> {
  const state = await ctx.temporal.client.workflow
    .getHandle(leaseWorkflowId(live.uid, 'eth0'))
    .query(leaseStateQuery);
  expect(state.phase).toBe('Active');
  expect(hostEnds(await dataplane.host.links()).map((l) => l.ifname)).toEqual([live.hostEnd]);
  expect((await live.pod.links()).map((l) => l.ifname).sort()).toEqual(['eth0', 'lo']);
}

const addCases: Array<[string, () => Partial<ShimCall>, number, RegExp]> = [
  ['relative CNI_NETNS', () => ({ netns: 'var/run/netns/x' }), 4, /invalid CNI_NETNS "var\/run\/netns\/x"/],
  ['CNI_IFNAME with a colon', () => ({ ifName: 'eth:0' }), 4, /invalid CNI_IFNAME "eth:0"/],
  ['CNI_IFNAME too long', () => ({ ifName: 'a-very-long-name0' }), 4, /invalid CNI_IFNAME/],
  // 9 characters but 18 bytes: IFNAMSIZ counts bytes
  ['CNI_IFNAME of 9 two-byte characters', () => ({ ifName: 'é'.repeat(9) }), 4, /invalid CNI_IFNAME/],
  // "à" is C3 A0, and the kernel's isspace() counts 0xA0 as a space
  ['CNI_IFNAME with a byte the kernel takes for a space', () => ({ ifName: 'và' }), 4, /invalid CNI_IFNAME/],
  [
    'a pod UID with a slash',
    () => ({ args: { K8S_POD_UID: 'a/b' } }),
    4,
    /invalid CNI_ARGS K8S_POD_UID "a\/b"/,
  ],
  ['CNI version 0.3.0', () => ({ stdin: ptp({}, '0.3.0') }), 1, /incompatible CNI version "0\.3\.0"/],
  ['unknown mode', () => ({ stdin: ptp({ mode: 'macvtap' }) }), 7, /mode: /],
  [
    'route gateway not an address',
    () => ({ stdin: ptp({ routes: [{ dst: '0.0.0.0/0', gw: 'router' }] }) }),
    7,
    /routes\[0\]\.gw/,
  ],
];

test.each(addCases)('ADD with %s', async (_name, makeOverrides, code, message) => {
  const uid = randomUUID();
  const overrides = makeOverrides();
  const pod = await makeNetns('pod');
  const outcome = await runShim(call('ADD', uid, pod, overrides));
  expect(outcome.exitCode).toBe(1);
  expect(outcome.json).toMatchObject({ code, msg: expect.stringMatching(message) });
  await expectNoLease(ctx.temporal, node, uid, overrides.ifName ?? 'eth0');
  expect((await pod.links()).map((l) => l.ifname)).toEqual(['lo']);
  await expectLivePodIntact();
});

test('CHECK of a container no lease holds is 3; CHECK in CNI 0.3.1 is 1', async () => {
  const unknown = await runShim(call('CHECK', randomUUID(), live.pod));
  expect(unknown.json).toMatchObject({ code: 3, msg: expect.stringMatching(/no lease holds container/) });
  const old = await runShim(call('CHECK', live.uid, live.pod, { stdin: ptp({}, '0.3.1') }));
  expect(old.json).toMatchObject({ code: 1, msg: expect.stringMatching(/CHECK is not defined/) });
  await expectLivePodIntact();
});

test('GC with a malformed valid-attachments list is 7 naming the field, and deactivates nothing', async () => {
  for (const key of ['cni.dev/valid-attachments', 'cni.dev/attachments']) {
    const stdin = ptp({ [key]: [{ containerID: `ctr-${live.uid}` }] });
    const outcome = await runShim(call('GC', randomUUID(), live.pod, { stdin }));
    expect(outcome.json).toMatchObject({
      code: 7,
      msg: expect.stringContaining(`${key}[0].ifname`),
    });
  }
  await expectLivePodIntact();
});

test('DEL of a container never added succeeds and changes nothing', async () => {
  const outcome = await runShim(call('DEL', randomUUID(), live.pod));
  expect({ code: outcome.exitCode, out: outcome.stdout }).toEqual({ code: 0, out: '' });
  await expectLivePodIntact();
});

test('STATUS with Temporal unreachable is 50', async () => {
  const stdin = { ...ptp(), temporal: { address: `127.0.0.1:${await freePort()}` }, timeoutSeconds: 2 };
  const outcome = await runShim(call('STATUS', randomUUID(), live.pod, { stdin }));
  expect(outcome.json).toMatchObject({ code: 50, msg: expect.stringMatching(/Temporal does not answer/) });
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(ctx.temporal, 1);
});
