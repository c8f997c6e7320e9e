import { readEnv, parseCniArgs } from '../../cni/env';
import { CniError } from '../../cni/errors';
import { parseNetConf, validAttachments } from '../../cni/netconf';
import { buildResult, convertResult } from '../../cni/result';
import { toCniError } from '../../cni/temporal';
import type { AddressGrant } from '../../domain/allocation';
import { isInterfaceName } from '../../domain/lease';
import { defaultRoutes, routesFor } from '../../domain/routes';

const code = (fn: () => unknown): number | undefined => {
  try {
    fn();
  } catch (err) {
    return err instanceof CniError ? err.code : -1;
  }
  return undefined;
};

const add = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c', CNI_NETNS: '/n', CNI_IFNAME: 'eth0' };

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
  for (const ifName of ['eth:0', 'eth 0', '..'])
    expect(code(() => readEnv({ ...add, CNI_IFNAME: ifName }))).toBe(4);
  expect(code(() => readEnv({ ...add, CNI_NETNS: 'run/netns/x' }))).toBe(4);
  expect(readEnv(add).netns).toBe('/n');
  expect(code(() => parseCniArgs('K8S_POD_UID'))).toBe(4);
  expect(readEnv({ CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c', CNI_IFNAME: 'eth0' }).netns).toBe('');
});

/** The CniError `fn` throws; anything else fails the test. */
function rejection(fn: () => unknown): CniError {
  try {
    fn();
  } catch (err) {
    if (err instanceof CniError) return err;
    throw err;
  }
  throw new Error('expected a CniError, got none');
}

test('interface names: at most 15 UTF-8 bytes (IFNAMSIZ), no byte the kernel refuses', () => {
  for (const name of ['eth0', 'x'.repeat(15), 'é'.repeat(7), '日本語日本', '😀😀😀', 'a.b', 'ctl\u0001'])
    expect([name, isInterfaceName(name)]).toEqual([name, true]);
  // 18, 16, 18 and 16 bytes; "à" is C3 A0 and the kernel's isspace() includes 0xA0
  for (const name of [
    'é'.repeat(9),
    'x'.repeat(16),
    '日本語日本語',
    '😀'.repeat(4),
    'và',
    '',
    '.',
    '..',
    '%00',
    'eth%d',
  ])
    expect([name, isInterfaceName(name)]).toEqual([name, false]);
});

test.each<[string, Record<string, string>]>([
  ['CNI_CONTAINERID', { CNI_CONTAINERID: 'c'.repeat(100_000) }],
  ['CNI_CONTAINERID', { CNI_CONTAINERID: 'c'.repeat(257) }],
  ['CNI_CONTAINERID', { CNI_CONTAINERID: '-starts-with-a-dash' }],
  ['CNI_CONTAINERID', { CNI_CONTAINERID: 'has/slash' }],
  ['CNI_IFNAME', { CNI_IFNAME: 'é'.repeat(9) }],
  ['CNI_IFNAME', { CNI_IFNAME: 'và' }],
  // Found by fuzzing (issue 18): a ptp ADD of "lo" parked its lease and answered 11.
  ['CNI_IFNAME', { CNI_IFNAME: 'lo' }],
  ['CNI_NETNS', { CNI_NETNS: `/${'n'.repeat(4095)}` }],
  ['CNI_NETNS', { CNI_NETNS: `/${'é'.repeat(2048)}` }],
  ['K8S_POD_NAME', { CNI_ARGS: `K8S_POD_NAME=${'p'.repeat(254)}` }],
  ['K8S_POD_NAME', { CNI_ARGS: 'K8S_POD_NAME=Not_A_Name' }],
  ['K8S_POD_NAMESPACE', { CNI_ARGS: `K8S_POD_NAMESPACE=${'n'.repeat(64)}` }],
  ['K8S_POD_NAMESPACE', { CNI_ARGS: 'K8S_POD_NAMESPACE=a.b' }],
  ['K8S_POD_UID', { CNI_ARGS: `K8S_POD_UID=${'u'.repeat(129)}` }],
])('environment: %s out of bounds is code 4 naming it', (field, overrides) => {
  const err = rejection(() => readEnv({ ...add, ...overrides }));
  expect(err.code).toBe(4);
  expect(err.message).toContain(field);
  expect(err.message.length).toBeLessThan(200);
});

test('environment: the longest valid values pass', () => {
  const env = readEnv({
    ...add,
    CNI_CONTAINERID: `c${'_.-'.repeat(85)}`,
    CNI_NETNS: `/${'n'.repeat(4094)}`,
    CNI_IFNAME: 'é'.repeat(7),
    CNI_ARGS: `K8S_POD_NAMESPACE=${'n'.repeat(63)};K8S_POD_NAME=${'p.q'.repeat(84)}p;K8S_POD_UID=${'u'.repeat(128)}`,
  });
  expect([env.containerId.length, env.netns.length, env.args.K8S_POD_NAME?.length]).toEqual([256, 4095, 253]);
});

const base = { cniVersion: '1.1.0', name: 'n', type: 'netlease' };
const longest = (n: number) => 'a'.repeat(n);

test.each<[string, Record<string, unknown>]>([
  ['pool', { pool: 'p'.repeat(5 * 1024 * 1024) }],
  ['pool', { pool: longest(64) }],
  ['pool', { pool: 'Not_A_Label' }],
  ['ipam.pool', { type: 'bridge', ipam: { type: 'netlease', pool: longest(64) } }],
  ['nodeName', { nodeName: longest(254) }],
  ['nodeName', { nodeName: 'UPPER' }],
  ['name', { name: longest(254) }],
  ['name', { name: 'has space' }],
  ['type', { type: longest(256) }],
  ['temporal.address', { temporal: { address: `${longest(300)}:7233` } }],
  ['temporal.namespace', { temporal: { namespace: longest(256) } }],
  ['temporal.taskQueue', { temporal: { taskQueue: longest(256) } }],
  ['temporal.taskQueue', { temporal: { taskQueue: '\u0000' } }], // the fuzz: visibility failed the list
  ['temporal.taskQueue', { temporal: { taskQueue: 'q\nq' } }],
  ['temporal.tls.clientCertFile', { temporal: { tls: { clientCertFile: `/${longest(4095)}` } } }],
  ['routes', { routes: Array.from({ length: 257 }, () => ({ dst: '198.18.0.0/16' })) }],
])('network config: %s out of bounds is code 7 naming it', (field, overrides) => {
  const err = rejection(() => parseNetConf({ ...base, ...overrides }));
  expect(err.code).toBe(7);
  expect(err.message).toMatch(
    new RegExp(`^invalid network configuration: (.*; )?${field.replace(/\./g, '\\.')}: `),
  );
  expect(err.message.length).toBeLessThan(300);
});

test('network config: the longest valid values pass', () => {
  const conf = parseNetConf({
    ...base,
    name: `n${'_.-'.repeat(84)}`,
    pool: longest(63),
    nodeName: longest(253),
    temporal: { address: `${longest(253)}:65535`, namespace: longest(255), taskQueue: longest(255) },
    routes: Array.from({ length: 256 }, () => ({ dst: '198.18.0.0/16' })),
  });
  expect([conf.name.length, conf.settings.pool?.length, conf.settings.routes?.length]).toEqual([
    253, 63, 256,
  ]);
});

test('network config: version 1, invalid 7, with field names', () => {
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

describe('Temporal failures as CNI codes', () => {
  const grpcError = (code: number, details: string) =>
    Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });

  test('a request Temporal refuses as invalid is error 7, never "try again later"', () => {
    const refused = toCniError(grpcError(3, 'WorkflowId length exceeds limit'), '127.0.0.1:7233');
    expect(refused.code).toBe(7);
    expect(refused.message).toContain('WorkflowId length exceeds limit');
  });

  test('Temporal unreachable or slow stays 11', () => {
    expect(toCniError(grpcError(14, 'connection refused'), '127.0.0.1:7233').code).toBe(11);
    expect(toCniError(new Error('deadline'), '127.0.0.1:7233').code).toBe(11);
  });
});
