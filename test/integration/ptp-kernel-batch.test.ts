// The ptp dataplane activities called directly (no workflow), in namespaces this test made: each
// end configured by one `ip -batch`, a failing line named in the error, names iproute2's batch
// reader would cut configured one command at a time, and every state an earlier attempt leaves.
import { createDataplaneActivities } from '../../activities/dataplane';
import type { AttachmentInput } from '../../domain/dataplane';
import { ip, IpError } from '../../kernel/ip';
import { ipBatch } from '../../kernel/ip-batch';
import { globalAddresses, isUp } from '../../kernel/links';
import { attachmentLinkNames } from '../../kernel/names';
import { deleteAllNetns, hostEnds, makeNetns, type TestNetns } from '../harness/netns';

let host: TestNetns;
afterAll(() => deleteAllNetns());
beforeAll(async () => {
  host = await makeNetns('khost');
});

function input(pod: TestNetns, ifName: string): AttachmentInput {
  return {
    leaseId: `lease/${pod.name}/${ifName}`,
    start: {
      podUid: pod.name,
      podNamespace: 'k',
      podName: pod.name,
      ifName,
      nodeName: 'k',
      pool: 'k',
      mode: 'ptp',
    },
    attachment: { containerId: `ctr-${pod.name}`, netns: pod.path, ifName },
    addresses: [
      { family: 4, address: '198.51.100.10', prefixLength: 24, gateway: '198.51.100.1' },
      { family: 6, address: '2001:db8::10', prefixLength: 64, gateway: '2001:db8::1' },
    ],
    routes: [{ dst: '0.0.0.0/0' }, { dst: '::/0' }],
  };
}

/** The pod end is up with both addresses and both default routes; the host end has the gateways. */
async function expectConfigured(pod: TestNetns, ifName: string): Promise<void> {
  const link = (await pod.links()).find((l) => l.ifname === ifName);
  expect(link && isUp(link)).toBe(true);
  expect(link && globalAddresses(link).sort()).toEqual(['198.51.100.10/24', '2001:db8::10/64']);
  for (const [family, gateway] of [[4, '198.51.100.1'] as const, [6, '2001:db8::1'] as const]) {
    expect(await pod.routes(family, ifName)).toContainEqual(
      expect.objectContaining({ dst: 'default', gateway }),
    );
  }
  const hostName = attachmentLinkNames(`ctr-${pod.name}`, ifName).hostName;
  const hostLink = (await host.links()).find((l) => l.ifname === hostName);
  expect(hostLink && globalAddresses(hostLink).sort()).toEqual(['198.51.100.1/32', '2001:db8::1/128']);
  expect(await host.routes(4, hostName)).toContainEqual(expect.objectContaining({ dst: '198.51.100.10' }));
}

test.each(['eth0', 'e#0', '"e0'])(
  '%s: activate twice converges, deactivate twice removes both ends',
  async (ifName) => {
    const activities = createDataplaneActivities({ hostNetns: host.name });
    const pod = await makeNetns('kpod');
    const attachment = input(pod, ifName);
    const first = await activities.activateAttachment(attachment);
    await expectConfigured(pod, ifName);
    expect(await activities.activateAttachment(attachment)).toEqual(first);
    await expectConfigured(pod, ifName);
    expect(await host.run('cat', ['/proc/sys/net/ipv4/ip_forward'])).toBe('1\n');

    for (let i = 0; i < 2; i++) await activities.deactivateAttachment(attachment);
    expect((await pod.links()).map((l) => l.ifname)).toEqual(['lo']);
    expect(hostEnds(await host.links())).toEqual([]);
  },
);

test('re-activation keeps the pair and restores what was taken from it', async () => {
  const activities = createDataplaneActivities({ hostNetns: host.name });
  const pod = await makeNetns('kpod');
  const attachment = input(pod, 'eth0');
  await activities.activateAttachment(attachment);
  const [before] = hostEnds(await host.links());
  await ip(pod.name, ['addr', 'flush', 'dev', 'eth0']);
  await ip(host.name, ['link', 'set', 'dev', before?.ifname ?? '?', 'down']);
  await activities.activateAttachment(attachment);
  await expectConfigured(pod, 'eth0');
  expect(hostEnds(await host.links()).map((l) => l.ifindex)).toEqual([before?.ifindex]);
  await activities.deactivateAttachment(attachment);
});

test('a failing batch line is named in the error and stops the lines after it', async () => {
  const ns = await makeNetns('kbatch');
  const failing = ipBatch(ns.name, [
    ['link', 'set', 'dev', 'lo', 'mtu', '1280'],
    ['addr', 'replace', '192.0.2.1/32', 'dev', 'nosuch0'],
    ['link', 'set', 'dev', 'lo', 'mtu', '1300'],
  ]);
  await expect(failing).rejects.toThrow(IpError);
  await expect(failing).rejects.toThrow(/^ip addr replace 192\.0\.2\.1\/32 dev nosuch0: .*"nosuch0"/);
  const lo = (await ns.links()).find((l) => l.ifname === 'lo');
  expect(lo?.mtu).toBe(1280);
});

test('a batch larger than a pipe into a namespace that is gone fails as an IpError', async () => {
  const commands = Array.from({ length: 5000 }, () => ['link', 'show', 'dev', 'lo']);
  await expect(ipBatch('/var/run/netns/nlt-gone-000000', commands)).rejects.toThrow(/cannot open/);
});
