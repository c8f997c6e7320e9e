// A foreign link (a bridge with an address) already holds the host-end name an attachment will
// use: the node agent must treat it as a conflict, never delete it, in activation and in DEL.
import { randomUUID } from 'node:crypto';
import { leaseWorkflowId } from '../../domain/ids';
import { ip } from '../../kernel/ip';
import { findLink, globalAddresses } from '../../kernel/links';
import { attachmentLinkNames } from '../../kernel/names';
import { leaseStateQuery, retrySignal } from '../../workflows/lease-messages';
import { netconf } from '../harness/netconf';
import { makeNetns, type TestNetns } from '../harness/netns';
import { withNodeAgent } from '../harness/node-agent';
import { runShim, type ShimOutcome } from '../harness/shim';
import { expectReplayed } from '../harness/replay';
import { uniqueName, withControlWorker } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const node = uniqueName('node');
// Attempts at about 0, 0.2, 0.4 and 0.8 s, then the lease parks.
const ctx = withControlWorker('hostconflict', () => ({
  activation: { initialIntervalSeconds: 0.2, maximumIntervalSeconds: 1, maximumAttempts: 4 },
}));
const dataplane = withNodeAgent(node, undefined, ctx.context);
const FOREIGN_ADDRESS = '192.0.2.1/24';

function cni(command: string, uid: string, pod: TestNetns): Promise<ShimOutcome> {
  return runShim({
    command,
    containerId: `ctr-${uid}`,
    netns: pod.path,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: 'hostconflict', K8S_POD_NAME: `pod-${uid.slice(0, 8)}`, K8S_POD_UID: uid },
    stdin: netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node, extra: { mode: 'ptp' } }),
  });
}

/** The foreign link as the kernel reports it: kind and global addresses. */
async function foreign(name: string): Promise<{ kind?: string; addresses: string[] } | undefined> {
  const link = await findLink(dataplane.host.name, name);
  return link && { kind: link.linkinfo?.info_kind, addresses: globalAddresses(link) };
}

test('a bridge holding the host-end name parks the lease and survives ADD and DEL; retry after removing it', async () => {
  const uid = randomUUID();
  const pod = await makeNetns('pod');
  const hostName = attachmentLinkNames(`ctr-${uid}`, 'eth0').hostName;
  await ip(dataplane.host.name, ['link', 'add', hostName, 'type', 'bridge']);
  await ip(dataplane.host.name, ['addr', 'add', FOREIGN_ADDRESS, 'dev', hostName]);
  const untouched = { kind: 'bridge', addresses: [FOREIGN_ADDRESS] };
  const handle = ctx.temporal.client.workflow.getHandle(leaseWorkflowId(uid, 'eth0'));

  const parked = await cni('ADD', uid, pod);
  expect(parked.json).toMatchObject({ code: 11, msg: expect.stringContaining(hostName) });
  const state = await handle.query(leaseStateQuery);
  expect(state.phase).toBe('ActivationFailed');
  expect(state.lastError).toMatch(new RegExp(`${hostName} .*not netlease's`));
  expect(await foreign(hostName)).toEqual(untouched);
  expect((await pod.links()).map((l) => l.ifname)).toEqual(['lo']);

  const del = await cni('DEL', uid, pod);
  expect({ code: del.exitCode, out: del.stdout }).toEqual({ code: 0, out: '' });
  expect(await foreign(hostName)).toEqual(untouched);

  // The runtime's next ADD parks again; the operator removes the bridge and sends `retry`.
  expect((await cni('ADD', uid, pod)).json).toMatchObject({ code: 11 });
  expect(await foreign(hostName)).toEqual(untouched);
  await ip(dataplane.host.name, ['link', 'del', hostName]);
  await handle.signal(retrySignal);
  const active = await waitForValue(
    () => handle.query(leaseStateQuery),
    (s) => s.phase === 'Active',
    30_000,
  );
  expect(active.phase).toBe('Active');
  expect((await foreign(hostName))?.kind).toBe('veth');
  const done = await cni('ADD', uid, pod);
  expect(done.json).not.toHaveProperty('code');
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(ctx.temporal, 1);
});
