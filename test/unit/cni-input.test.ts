import { readEnv, parseCniArgs } from '../../cni/env';
import { CniError } from '../../cni/errors';
import { parseNetConf, validAttachments } from '../../cni/netconf';
import { buildResult, convertResult } from '../../cni/result';
import type { AddressGrant } from '../../domain/allocation';
import { defaultRoutes, routesFor } from '../../domain/routes';

const code = (fn: () => unknown): number | undefined => {
  try {
    fn();
  } catch (err) {
    return err instanceof CniError ? err.code : -1;
  }
  return undefined;
};

test('environment: missing or invalid variables are code 4', () => {
  expect(code(() => readEnv({}))).toBe(4);
  expect(code(() => readEnv({ CNI_COMMAND: 'ADD', CNI_NETNS: '/n', CNI_IFNAME: 'eth0' }))).toBe(4);
  expect(code(() => readEnv({ CNI_COMMAND: 'FROB' }))).toBe(4);
  expect(
    code(() =>
      readEnv({
        CNI_COMMAND: 'ADD',
        CNI_CONTAINERID: 'c',
        CNI_NETNS: '/n',
        CNI_IFNAME: 'a-very-long-ifname',
      }),
    ),
  ).toBe(4);
  const add = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c', CNI_NETNS: '/n', CNI_IFNAME: 'eth0' };
  for (const ifName of ['eth:0', 'eth 0', '..'])
    expect(code(() => readEnv({ ...add, CNI_IFNAME: ifName }))).toBe(4);
  expect(code(() => readEnv({ ...add, CNI_NETNS: 'run/netns/x' }))).toBe(4);
  expect(readEnv(add).netns).toBe('/n');
  expect(code(() => parseCniArgs('K8S_POD_UID'))).toBe(4);
  expect(readEnv({ CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c', CNI_IFNAME: 'eth0' }).netns).toBe('');
});

test('network config: version 1, invalid 7, with field names', () => {
  const base = { cniVersion: '1.1.0', name: 'n', type: 'netlease' };
  expect(code(() => parseNetConf({ ...base, cniVersion: '9.9.9' }))).toBe(1);
  expect(code(() => parseNetConf({ ...base, name: 7 }))).toBe(7);
  expect(() => parseNetConf({ ...base, routes: [{ dst: '198.18.0.0/99' }] })).toThrow(
    /routes\[0\]\.dst: invalid CIDR/,
  );
  expect(() => parseNetConf({ ...base, type: 'bridge', ipam: { type: 'netlease', pool: '' } })).toThrow(
    /ipam\.pool/,
  );
  expect(() => parseNetConf({ ...base, temporal: { adress: 'x' } })).toThrow(/temporal: .*adress/);
  expect(parseNetConf({ ...base, type: 'bridge', ipam: { type: 'netlease' } }).delegated).toBe(true);
});

const v6: AddressGrant[] = [{ family: 6, address: 'fd00::2', prefixLength: 120, gateway: 'fd00::1' }];
const links = {
  host: { name: 'nl0123456789abc', mac: '02:00:00:00:00:01' },
  container: { name: 'eth0', mac: '02:00:00:00:00:02', sandbox: '/var/run/netns/p' },
};

test('results convert to older versions', () => {
  const result = buildResult('0.3.1', v6, defaultRoutes(v6));
  expect(convertResult(result, '0.3.1')).toEqual({
    cniVersion: '0.3.1',
    ips: [{ version: '6', address: 'fd00::2/120', gateway: 'fd00::1' }],
    routes: [{ dst: '::/0', gw: 'fd00::1' }],
    dns: {},
  });
  expect(convertResult(result, '1.0.0')).not.toHaveProperty('ips.0.version');
});

test.each(['0.3.1', '0.4.0', '1.0.0', '1.1.0'])(
  'a ptp result in %s lists both ends, IPs on the pod end',
  (version) => {
    const converted = convertResult(
      buildResult(version, v6, routesFor(v6, [{ dst: 'fd00:1::/64' }]), links),
      version,
    );
    expect(converted).toMatchObject({
      cniVersion: version,
      interfaces: [links.host, links.container],
      ips: [{ address: 'fd00::2/120', gateway: 'fd00::1', interface: 1 }],
      routes: [{ dst: 'fd00:1::/64' }],
    });
    expect((converted.ips as Array<Record<string, unknown>>)[0]?.version).toBe(
      version.startsWith('0.') ? '6' : undefined,
    );
  },
);

test('GC reads cni.dev/valid-attachments, or the older cni.dev/attachments', () => {
  const valid = [{ containerID: 'c1', ifname: 'eth0' }];
  expect(validAttachments({ 'cni.dev/valid-attachments': valid })).toEqual(valid);
  expect(validAttachments({ 'cni.dev/attachments': valid })).toEqual(valid);
  expect(validAttachments({})).toEqual([]);
  expect(code(() => validAttachments({ 'cni.dev/valid-attachments': [{ containerID: 'c1' }] }))).toBe(7);
  expect(() => validAttachments({ 'cni.dev/valid-attachments': [{ containerID: 'c1' }] })).toThrow(
    /cni\.dev\/valid-attachments\[0\]\.ifname/,
  );
});
