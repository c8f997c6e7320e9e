import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeAgentConfigSchema, TemporalConnectionSchema } from '../../domain/config';
import { configuredNodeName, HostNodeNameError, hostNodeName } from '../../kubernetes/node-name';
import { tlsConfig, TlsFileError } from '../../temporal/connection';
import { loadConfigFile, parseConfigText } from '../../worker/config-file';

test('YAML with defaults', () => {
  const config = parseConfigText(
    'pools:\n  - name: default\n    cidrs: [198.18.0.0/16, "fd00::/64"]\n',
    'netlease.yaml',
  );
  expect(config.reuseCooldownSeconds).toBe(30);
  expect(config.pools[0]?.blockSize).toEqual({ ipv4: 26, ipv6: 120 });
  expect(config.temporal).toMatchObject({
    address: '127.0.0.1:7233',
    namespace: 'default',
    taskQueue: 'netlease-control',
  });
});

test('kubernetes: the pod watcher reads the eth0 lease of each pod unless told other interfaces', () => {
  const pools = 'pools:\n  - name: default\n    cidrs: [198.18.0.0/16]\n';
  const read = (kubernetes: string) => parseConfigText(`${pools}kubernetes:${kubernetes}`, 'netlease.yaml');
  expect(read(' {}').kubernetes?.podInterfaces).toEqual(['eth0']);
  expect(read(' {podInterfaces: [eth0, net1]}').kubernetes?.podInterfaces).toEqual(['eth0', 'net1']);
});

test('kubernetes.poolObjects: the pools come from the API, none from the file', () => {
  const config = parseConfigText('kubernetes: {poolObjects: true}\n', 'netlease.yaml');
  expect([config.pools, config.kubernetes?.poolStatusIntervalSeconds]).toEqual([[], 30]);
});

test.each([
  [
    '{"pools":[{"name":"a","cidrs":["198.18.0.0/33"]}]}',
    /pools\[0\]\.cidrs\[0\]: invalid CIDR "198\.18\.0\.0\/33"/,
  ],
  ['{"pools":[{"name":"a","cidrs":["198.18.0.1/16"]}]}', /pools\[0\]\.cidrs\[0\]: .*host bits set/],
  [
    '{"pools":[{"name":"a","cidrs":["198.18.0.0/16"],"exclude":["198.18.0.300"]}]}',
    /pools\[0\]\.exclude\[0\]: invalid IPv4/,
  ],
  [
    '{"pools":[{"name":"a","cidrs":["198.18.0.0/16","198.18.4.0/24"]}]}',
    /pools\[0\]\.cidrs\[1\]: overlaps cidrs\[0\]/,
  ],
  ['{"pools":[{"name":"a","cidrs":["198.18.0.0/28"]}]}', /pools\[0\]\.cidrs\[0\]: block size \/26 is larger/],
  ['{"pools":[{"name":"A_b","cidrs":["198.18.0.0/16"]}]}', /pools\[0\]\.name: must be a DNS label/],
  ['{"pools":[{"name":"a","cidrs":["198.18.0.0/16"]}],"reuseCooldownSeconds":-1}', /reuseCooldownSeconds: /],
  [
    '{"pools":[{"name":"a","cidrs":["198.18.0.0/16"]},{"name":"a","cidrs":["fd00::/64"]}]}',
    /pools\[1\]\.name: duplicate pool "a"/,
  ],
  ['{"pools":[]}', /pools: at least one pool is required/],
  ['{}', /pools: at least one pool is required/],
  [
    '{"pools":[{"name":"a","cidrs":["198.18.0.0/16"]}],"kubernetes":{"poolObjects":true}}',
    /pools: the pools come from NetleasePool objects \(kubernetes\.poolObjects\): remove them here/,
  ],
  [
    '{"pools":[{"name":"a","cidrs":["198.18.0.0/16"]}],"temporal":{"tls":{"clientCertFile":"c.pem"}}}',
    /temporal\.tls\.clientKeyFile: required with clientCertFile/,
  ],
  ['{"pools":[{"name":"a","cidrs":["198.18.0.0/16"],"gatway":"none"}]}', /pools\[0\]: .*gatway/],
  [
    '{"pools":[{"name":"a","cidrs":["198.18.0.0/16"]}],"kubernetes":{"podInterfaces":["eth0","eth0"]}}',
    /kubernetes\.podInterfaces: names an interface twice/,
  ],
  [
    '{"pools":[{"name":"a","cidrs":["198.18.0.0/16"]}],"kubernetes":{"podInterfaces":[]}}',
    /kubernetes\.podInterfaces: /,
  ],
])('config.json %s is rejected naming the field', (text, message) => {
  expect(() => parseConfigText(text, 'config.json')).toThrow(message);
});

// Found by fuzzing (issue 18): an address with no port, or a URL, and a namespace with control
// characters (it is a gRPC header value) passed the schema and came back from every call as
// "try again later" (11), as if Temporal were away.
test('temporal: the address is host:port, the namespace visible ASCII', () => {
  const accepts = (temporal: Record<string, string>) => TemporalConnectionSchema.safeParse(temporal).success;
  for (const address of ['temporal-frontend.temporal:7233', '127.0.0.1:7233', '[::1]:7233', 'localhost:1'])
    expect([address, accepts({ address })]).toEqual([address, true]);
  for (const address of [
    '127.0.0.1',
    '127.0.0.1:',
    ':7233',
    'x:0',
    'x:65536',
    'http://x:1',
    'unix:///x',
    '[::1',
  ])
    expect([address, accepts({ address })]).toEqual([address, false]);
  expect(accepts({ namespace: 'team-a.prod_1' })).toBe(true);
  for (const namespace of ['a\u0001b', 'a b', 'é'])
    expect([namespace, accepts({ namespace })]).toEqual([namespace, false]);
});

test('file errors name the file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'netlease-config-'));
  try {
    writeFileSync(join(dir, 'bad.yaml'), 'pools: [\n');
    expect(() => loadConfigFile(join(dir, 'bad.yaml'))).toThrow(/cannot decode .*bad\.yaml/);
    expect(() => loadConfigFile(join(dir, 'missing.yaml'))).toThrow(/cannot read config .*missing\.yaml/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a config file names per-pod values as $(NAME) from the environment (a DaemonSet downward API)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'netlease-config-'));
  const env = {
    NETLEASE_NODE_NAME: process.env.NETLEASE_NODE_NAME,
    NETLEASE_POD_IP: process.env.NETLEASE_POD_IP,
  };
  try {
    const file = join(dir, 'node-agent.yaml');
    writeFileSync(
      file,
      'hostNetns: host-$(NETLEASE_NODE_NAME)\nmetrics: { port: 9465, host: $(NETLEASE_POD_IP) }\n',
    );
    process.env.NETLEASE_NODE_NAME = 'node-a';
    process.env.NETLEASE_POD_IP = '198.19.255.1';
    const config = loadConfigFile(file, NodeAgentConfigSchema);
    expect([config.hostNetns, config.metrics?.host]).toEqual(['host-node-a', '198.19.255.1']);
    writeFileSync(file, 'hostNetns: literal-$$(NETLEASE_NODE_NAME)\n');
    expect(loadConfigFile(file, NodeAgentConfigSchema).hostNetns).toBe('literal-$(NETLEASE_NODE_NAME)');
    delete process.env.NETLEASE_POD_IP;
    writeFileSync(file, 'metrics: { port: 9465, host: $(NETLEASE_POD_IP) }\n');
    expect(() => loadConfigFile(file, NodeAgentConfigSchema)).toThrow(
      /node-agent\.yaml: \$\(NETLEASE_POD_IP\) is not set in the environment/,
    );
  } finally {
    for (const [name, value] of Object.entries(env))
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    rmSync(dir, { recursive: true, force: true });
  }
});

test('temporal.tls: files are read up front; an unreadable one is a config error naming the field', () => {
  const dir = mkdtempSync(join(tmpdir(), 'netlease-tls-'));
  try {
    writeFileSync(join(dir, 'ca.pem'), 'ca');
    const tls = { serverRootCACertificateFile: join(dir, 'ca.pem'), serverNameOverride: 'temporal' };
    expect(tlsConfig(TemporalConnectionSchema.parse({}))).toBeUndefined();
    expect(tlsConfig(TemporalConnectionSchema.parse({ tls }))).toEqual({
      serverNameOverride: 'temporal',
      serverRootCACertificate: Buffer.from('ca'),
    });
    const missing = { ...tls, clientCertFile: join(dir, 'ca.pem'), clientKeyFile: join(dir, 'key.pem') };
    const read = () => tlsConfig(TemporalConnectionSchema.parse({ tls: missing }));
    expect(read).toThrow(TlsFileError);
    expect(read).toThrow(/cannot read temporal\.tls\.clientKeyFile ".*key\.pem": ENOENT/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('metrics: optional; loopback and a 30 s sample by default; the port is required', () => {
  const pools = 'pools:\n  - name: default\n    cidrs: [198.18.0.0/16]\n';
  expect(parseConfigText(pools, 'a.yaml').metrics).toBeUndefined();
  expect(parseConfigText(`${pools}metrics: { port: 9464 }\n`, 'a.yaml').metrics).toEqual({
    port: 9464,
    host: '127.0.0.1',
    sampleIntervalSeconds: 30,
  });
  expect(() => parseConfigText(`${pools}metrics: { host: 0.0.0.0 }\n`, 'a.yaml')).toThrow(/metrics\.port/);
  expect(parseConfigText(pools, 'a.yaml').logLevel).toBe('info');
});

test('the node agent: nodeName must be a Kubernetes node name', () => {
  const agent = (text: string) => parseConfigText(text, 'node-agent.yaml', NodeAgentConfigSchema);
  expect(agent('nodeName: worker-1.example.com\n').nodeName).toBe('worker-1.example.com');
  expect(() => agent('nodeName: Worker_1\n')).toThrow(/nodeName: must be a DNS subdomain/);
});

test("no nodeName: the host name, trimmed and lowercased as the kubelet's default, or an error naming nodeName", () => {
  expect(hostNodeName(' Worker-1.Example.COM\n')).toBe('worker-1.example.com');
  expect(() => hostNodeName('build_host')).toThrow(HostNodeNameError);
  expect(() => hostNodeName('build_host')).toThrow(
    /^nodeName: not set, and the host name "build_host" is not a Kubernetes node name \(must be a DNS subdomain.*\); set nodeName$/,
  );
  expect(() => hostNodeName('-x')).toThrow(/nodeName: not set/);
});

test('NETLEASE_NODE_NAME is checked as a node name, naming the variable', () => {
  expect(configuredNodeName(undefined, 'NETLEASE_NODE_NAME')).toBeUndefined();
  expect(configuredNodeName('node-1', 'NETLEASE_NODE_NAME')).toBe('node-1');
  expect(() => configuredNodeName('Node_1', 'NETLEASE_NODE_NAME')).toThrow(
    /^NETLEASE_NODE_NAME "Node_1": must be a DNS subdomain/,
  );
});
