// Every result version the shim supports, checked field by field against the spec's types: both
// families, IPAM mode (no interfaces) and ptp mode (host and pod end).
import { SUPPORTED_VERSIONS } from '../../cni/netconf';
import { buildResult, convertResult } from '../../cni/result';
import type { AddressGrant } from '../../domain/allocation';
import { routesFor } from '../../domain/routes';
import { CniResultSchemas } from '../harness/cni-result';

const v4: AddressGrant = { family: 4, address: '198.18.0.2', prefixLength: 26, gateway: '198.18.0.1' };
const v6: AddressGrant = { family: 6, address: 'fd00::2', prefixLength: 120, gateway: 'fd00::1' };
const links = {
  host: { name: 'nl0123456789abc', mac: '02:00:00:00:00:01' },
  container: { name: 'eth0', mac: '02:00:00:00:00:02', sandbox: '/var/run/netns/p' },
};

const families: Array<[string, AddressGrant[]]> = [
  ['IPv4', [v4]],
  ['IPv6', [v6]],
  ['dual-stack', [v4, v6]],
];
const modes = [
  ['ipam', undefined],
  ['ptp', links],
] as const;
const cases = SUPPORTED_VERSIONS.flatMap((version) =>
  families.flatMap(([family, addresses]) =>
    modes.map(([mode, withLinks]) => [version, family, mode, addresses, withLinks] as const),
  ),
);

test('there is a schema for every supported version', () => {
  expect(Object.keys(CniResultSchemas).sort()).toEqual([...SUPPORTED_VERSIONS].sort());
});

test.each(cases)(
  '%s result, %s, %s mode, matches the spec',
  (version, _family, _mode, addresses, withLinks) => {
    const result = convertResult(
      buildResult(version, addresses, routesFor(addresses, undefined), withLinks),
      version,
    );
    const parsed = CniResultSchemas[version].safeParse(result);
    expect(parsed.success ? [] : parsed.error.issues).toEqual([]);
  },
);

test('the schemas tell the versions apart', () => {
  const [old, current] = (['0.4.0', '1.0.0'] as const).map((version) =>
    convertResult(buildResult(version, [v4, v6], routesFor([v4, v6], undefined), links), version),
  );
  // 1.0.0 dropped ips[].version; 0.4.0 requires it, matching the address
  expect(CniResultSchemas['1.0.0'].safeParse({ ...old, cniVersion: '1.0.0' }).success).toBe(false);
  expect(CniResultSchemas['0.4.0'].safeParse({ ...current, cniVersion: '0.4.0' }).success).toBe(false);
  const swapped = { ...old, ips: [{ ...(old?.ips as object[])[0], version: '6' }] };
  expect(CniResultSchemas['0.4.0'].safeParse(swapped).success).toBe(false);
  // route fields of 1.1.0 only
  const withMtu = { ...current, routes: [{ dst: '0.0.0.0/0', mtu: 1400 }] };
  expect(CniResultSchemas['1.0.0'].safeParse(withMtu).success).toBe(false);
  expect(CniResultSchemas['1.1.0'].safeParse({ ...withMtu, cniVersion: '1.1.0' }).success).toBe(true);
  // an interface index past the list
  const dangling = { ...current, interfaces: [links.host] };
  expect(CniResultSchemas['1.0.0'].safeParse(dangling).success).toBe(false);
});
