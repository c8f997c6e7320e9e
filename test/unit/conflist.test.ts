// The node agent's preProduce against the node's conflist (domain/conflist): the terms an ADD
// through the conflist carries, and one line naming both sides when they differ.
import { conflistTerms, preProduceMismatch } from '../../domain/conflist';
import { conflist, NetworkSchema } from '../../worker/agent/install-cni';

const preProduce = { network: 'net-a', mode: 'ipam' as const, pool: 'default', ifName: 'eth0' };
const PATH = '/host/etc/cni/net.d/10-netlease.conflist';
/** What install-cni writes for these settings. */
const installed = (network: Record<string, unknown>) => conflist(NetworkSchema.parse(network));

test("install-cni's conflist: network, mode and pool as written, the runtime's eth0", () => {
  expect(conflistTerms(installed({ name: 'net-b', mode: 'ptp', pool: 'v6only' }))).toEqual({
    network: 'net-b',
    mode: 'ptp',
    pool: 'v6only',
    ifName: 'eth0',
  });
});

test('a delegated netlease IPAM is ipam mode; omitted settings take the shim defaults (no pool: selected)', () => {
  const bridge = {
    cniVersion: '1.1.0',
    name: 'net-a',
    plugins: [{ type: 'bridge', bridge: 'cni0', ipam: { type: 'netlease' } }],
  };
  const selected = { ...preProduce, pool: undefined };
  expect(conflistTerms(bridge)).toEqual(selected);
  const main = { cniVersion: '1.1.0', name: 'net-a', plugins: [{ type: 'netlease' }] };
  expect(conflistTerms(main)).toEqual(selected);
});

test('they agree: no difference', () => {
  expect(preProduceMismatch(preProduce, installed({ name: 'net-a', mode: 'ipam' }), PATH)).toBeUndefined();
});

test('they differ: one line naming the fields and both sides', () => {
  const message = preProduceMismatch(
    preProduce,
    installed({ name: 'net-b', mode: 'ptp', pool: 'v6only' }),
    PATH,
  );
  expect(message).toBe(
    `preProduce differs from ${PATH} in network, mode, pool: preProduce is network net-a (ipam, pool default, eth0), ` +
      "the conflist network net-b (ptp, pool v6only, eth0); pods' ADDs will not match the leases pre-produced for them",
  );
  expect(message).not.toContain('\n');
});

test("an ifName other than eth0 differs: runtimes call the default network's interface eth0", () => {
  const message = preProduceMismatch(
    { ...preProduce, ifName: 'net1' },
    installed({ name: 'net-a', mode: 'ipam' }),
    PATH,
  );
  expect(message).toMatch(
    / in ifName: .*\(ipam, pool default, net1\).*\(ipam, pool default, eth0\) as runtimes name/,
  );
});

test('a conflist without a netlease plugin, or not a conflist, is a difference saying so', () => {
  const other = {
    cniVersion: '1.1.0',
    name: 'net-a',
    plugins: [{ type: 'bridge', ipam: { type: 'host-local' } }],
  };
  expect(preProduceMismatch(preProduce, other, PATH)).toBe(
    `preProduce is network net-a (ipam, pool default, eth0), but ${PATH} has no netlease plugin ` +
      '(type or ipam.type "netlease"): no ADD will match its leases',
  );
  expect(preProduceMismatch(preProduce, { cniVersion: '1.1.0', type: 'netlease' }, PATH)).toMatch(
    / is not a conflist \(name: .*plugins: /,
  );
  expect(preProduceMismatch(preProduce, installed({ name: 'net-a' }), PATH)).toMatch(/in mode:/); // ptp default
  expect(
    preProduceMismatch(preProduce, { name: 'net-a', plugins: [{ type: 'netlease', mode: 'bridge' }] }, PATH),
  ).toMatch(/ has an invalid netlease plugin \(mode: /);
});
