import { readEnv, parseCniArgs } from '../../cni/env';
import { CniError } from '../../cni/errors';
import { parseNetConf } from '../../cni/netconf';
import { buildResult, convertResult } from '../../cni/result';

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

test('results convert to older versions', () => {
  const result = buildResult(
    '0.3.1',
    [{ family: 6, address: 'fd00::2', prefixLength: 120, gateway: 'fd00::1' }],
    undefined,
  );
  expect(convertResult(result, '0.3.1')).toEqual({
    cniVersion: '0.3.1',
    ips: [{ version: '6', address: 'fd00::2/120', gateway: 'fd00::1' }],
    routes: [{ dst: '::/0', gw: 'fd00::1' }],
    dns: {},
  });
  expect(convertResult(result, '1.0.0')).not.toHaveProperty('ips.0.version');
});
