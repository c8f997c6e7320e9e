// The real cnitool v1.3.0 drives netlease as the runtime would: a conflist [loopback, netlease
// in ptp mode], and the reference bridge plugin delegating IPAM to netlease.
import { randomUUID } from 'node:crypto';
import { leasePodUid } from '../../domain/ids';
import { globalAddresses, type Link } from '../../kernel/links';
import { cniSetup, cnitool, cnitoolContainerId, type CniSetup } from '../harness/cnitool';
import { netconf } from '../harness/netconf';
import { hostEnds, makeNetns, type TestNetns } from '../harness/netns';
import { podsListed, untilListed } from '../harness/listed';
import { withNodeAgent } from '../harness/node-agent';
import { runShim } from '../harness/shim';
import { expectReplayed } from '../harness/replay';
import { uniqueName, withControlWorker } from '../harness/temporal';

const node = uniqueName('node');
const ctx = withControlWorker('cnitool', () => ({
  activation: { initialIntervalSeconds: 0.2, maximumIntervalSeconds: 1, maximumAttempts: 5 },
}));
const ptpNet = uniqueName('ptp');
const bridgeNet = uniqueName('bridge');
const dataplane = withNodeAgent(node, undefined, ctx.context);
let ptp: CniSetup;

/** A plugin entry of a conflist: the network config without the conflist's own keys. */
const netlease = (extra: Record<string, unknown>) => {
  const conf = netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node, extra });
  return Object.fromEntries(Object.entries(conf).filter(([key]) => key !== 'cniVersion' && key !== 'name'));
};

beforeAll(async () => {
  ptp = cniSetup({
    [ptpNet]: { cniVersion: '1.1.0', plugins: [{ type: 'loopback' }, netlease({ mode: 'ptp' })] },
  });
});

const eth0 = (links: Link[]) => links.find((l) => l.ifname === 'eth0');
const ok = (outcome: { exitCode: number | null; stderr: string }) =>
  expect({ code: outcome.exitCode, err: outcome.stderr }).toEqual({ code: 0, err: '' });

test('conflist [loopback, netlease ptp]: add, check, del, del again, status', async () => {
  const pod = await makeNetns('pod');
  const add = await cnitool(ptp, 'add', ptpNet, pod.path);
  ok(add);
  const result = JSON.parse(add.stdout) as {
    ips: Array<{ address: string }>;
    interfaces: Array<{ name: string }>;
  };
  const links = await pod.links();
  expect(links.find((l) => l.ifname === 'lo')?.flags).toContain('UP');
  const podEnd = eth0(links);
  expect(podEnd && globalAddresses(podEnd)).toEqual(result.ips.map((i) => i.address));
  expect(result.ips.map((i) => i.address)).toEqual([
    expect.stringMatching(/^198\.18\./),
    expect.stringMatching(/^fd00:18::/),
  ]);
  expect((await pod.routes(4, 'eth0')).map((r) => r.dst)).toContain('default');
  ok(await cnitool(ptp, 'check', ptpNet, pod.path));
  ok(await cnitool(ptp, 'status', ptpNet, pod.path));
  ok(await cnitool(ptp, 'del', ptpNet, pod.path));
  expect(eth0(await pod.links())).toBeUndefined();
  expect(hostEnds(await dataplane.host.links()).map((l) => l.ifname)).not.toContain(
    result.interfaces[0]?.name,
  );
  ok(await cnitool(ptp, 'del', ptpNet, pod.path));
});

test('GC with one attachment dropped removes only that one; cnitool gc (no valid list) removes the rest', async () => {
  const kept = await makeNetns('pod');
  const dropped = await makeNetns('pod');
  ok(await cnitool(ptp, 'add', ptpNet, kept.path));
  ok(await cnitool(ptp, 'add', ptpNet, dropped.path));
  // GC finds the node's leases through visibility. (cnitool passes no K8S_POD_UID: the container id stands in.)
  const uidOf = (netns: TestNetns) => leasePodUid(undefined, cnitoolContainerId(netns.path));
  await untilListed(ctx.temporal.client, ctx.temporal.taskQueue, podsListed(uidOf(kept), uidOf(dropped)));
  const gc = await runShim({
    command: 'GC',
    stdin: {
      ...netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node, extra: { mode: 'ptp' } }),
      name: ptpNet,
      'cni.dev/valid-attachments': [{ containerID: cnitoolContainerId(kept.path), ifname: 'eth0' }],
    },
  });
  expect({ code: gc.exitCode, out: gc.stdout }).toEqual({ code: 0, out: '' });
  expect(eth0(await dropped.links())).toBeUndefined();
  expect(eth0(await kept.links())).toBeDefined();
  ok(await cnitool(ptp, 'check', ptpNet, kept.path));

  // GC of another network on this node leaves this network's attachments alone.
  const other = await runShim({
    command: 'GC',
    stdin: { ...netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node }), name: 'another-network' },
  });
  expect(other.exitCode).toBe(0);
  expect(eth0(await kept.links())).toBeDefined();

  ok(await cnitool(ptp, 'gc', ptpNet, kept.path));
  expect(eth0(await kept.links())).toBeUndefined();
  expect(hostEnds(await dataplane.host.links())).toEqual([]);
});

test('the reference bridge plugin delegating IPAM to netlease: add, check, del', async () => {
  // bridge makes its bridge and host-side veth in the namespace it runs in: cnitool runs in `host`.
  // netlease's shim inside `host` still reaches its agent: the CNI API is a unix socket.
  const bridge = cniSetup({
    [bridgeNet]: {
      cniVersion: '1.1.0',
      plugins: [
        { type: 'loopback' },
        { type: 'bridge', bridge: 'nlbr0', isGateway: true, ipam: netlease({ type: 'netlease' }) },
      ],
    },
  });
  const pod = await makeNetns('pod');
  const inHost = {
    inNetns: dataplane.host.path,
    env: { CNI_ARGS: `IgnoreUnknown=1;K8S_POD_UID=${randomUUID()}` },
  };
  const add = await cnitool(bridge, 'add', bridgeNet, pod.path, inHost);
  ok(add);
  const result = JSON.parse(add.stdout) as { ips: Array<{ address: string; gateway: string }> };
  expect(result.ips.map((i) => i.address)).toEqual([
    expect.stringMatching(/^198\.18\./),
    expect.stringMatching(/^fd00:18::/),
  ]);
  const podEnd = eth0(await pod.links());
  expect(podEnd && globalAddresses(podEnd)).toEqual(expect.arrayContaining(result.ips.map((i) => i.address)));
  const nlbr0 = (await dataplane.host.links()).find((l) => l.ifname === 'nlbr0');
  expect(nlbr0 && globalAddresses(nlbr0)).toContain(`${result.ips[0]?.gateway}/26`);
  ok(await cnitool(bridge, 'check', bridgeNet, pod.path, inHost));
  ok(await cnitool(bridge, 'del', bridgeNet, pod.path, inHost));
  expect(eth0(await pod.links())).toBeUndefined();
  ok(await cnitool(bridge, 'del', bridgeNet, pod.path, inHost));
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(ctx.temporal, 3);
});
