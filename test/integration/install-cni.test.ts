// The real install-cni program (dist/worker/agent/install-cni.js) against temporary directories standing
// in for the host's /opt/cni/bin and /etc/cni/net.d, and the real cnitool reading what it wrote.
import { copyFileSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { programPath } from '../../tools/programs';
import { runToEnd, startTracked, stopPid } from '../../tools/processes';
import { cnitool } from '../harness/cnitool';
import { deleteAllNetns, futureNetns } from '../harness/netns';

const PROGRAM = join(__dirname, '..', '..', 'worker', 'agent', 'install-cni.js');
const made: string[] = [];

// The installed "shim" here is a stand-in: the real one forwards each call to a running node agent
// (its own tests cover that). This one records the network config it was given and answers like a
// CNI 1.1.0 plugin, so what is checked is install-cni's part: files, conflist, the plugin chain.
const STAND_IN = `#!/bin/sh
cat > "$NLT_RECORD/$CNI_COMMAND.json"
case "$CNI_COMMAND" in
ADD) printf '{"cniVersion":"1.1.0","interfaces":[{"name":"%s","sandbox":"%s"}],"ips":[{"address":"198.18.0.5/32","interface":0}]}' "$CNI_IFNAME" "$CNI_NETNS" ;;
VERSION) printf '{"cniVersion":"1.1.0","supportedVersions":["1.0.0","1.1.0"]}' ;;
esac
`;

interface Node {
  root: string;
  source: string;
  binDir: string;
  confDir: string;
  record: string;
  run(args?: string[], env?: Record<string, string>): ReturnType<typeof runToEnd>;
}

/** A fresh "node": bin dir with the runtime's loopback plugin, empty conf dir, a shim to install. */
function node(): Node {
  const root = mkdtempSync(join(tmpdir(), 'netlease-install-'));
  made.push(root);
  const [binDir, confDir, record] = ['bin', 'net.d', 'record'].map((d) => join(root, d)) as [
    string,
    string,
    string,
  ];
  for (const dir of [binDir, confDir, record]) mkdirSync(dir);
  symlinkSync(programPath('loopback'), join(binDir, 'loopback'));
  const source = join(root, 'shim');
  writeFileSync(source, STAND_IN, { mode: 0o700 });
  const dirs = ['--source', source, '--bin-dir', binDir, '--conf-dir', confDir];
  const run = (args: string[] = [], env: Record<string, string> = {}) =>
    runToEnd(process.execPath, [PROGRAM, ...dirs, ...args], { env: { PATH: process.env.PATH, ...env } });
  return { root, source, binDir, confDir, record, run };
}

const lines = (text: string) => text.split('\n').filter(Boolean);
const stamp = (path: string) => {
  const s = statSync(path);
  return { ino: s.ino, mtimeMs: s.mtimeMs, mode: s.mode & 0o7777 };
};

afterAll(async () => {
  await deleteAllNetns();
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

test('first run copies and writes; a second run changes nothing', async () => {
  const n = node();
  const config = join(n.root, 'install-cni.yaml');
  writeFileSync(config, 'network:\n  pool: blue\n  mode: ipam\n');
  const shim = join(n.binDir, 'netlease');
  const conf = join(n.confDir, '10-netlease.conflist');
  const first = await n.run(['--config', config], { NETLEASE_NODE_NAME: 'node-a' });
  expect({ code: first.exitCode, err: first.stderr }).toEqual({ code: 0, err: '' });
  expect(lines(first.stdout)).toEqual([
    expect.stringMatching(new RegExp(`^copied ${shim} from ${n.source} \\(sha256 [0-9a-f]{12}\\)$`)),
    `wrote ${conf}`,
  ]);
  expect(readFileSync(shim, 'utf8')).toBe(STAND_IN);
  expect(JSON.parse(readFileSync(conf, 'utf8'))).toEqual({
    cniVersion: '1.1.0',
    name: 'netlease',
    plugins: [
      { type: 'loopback' },
      {
        type: 'netlease',
        mode: 'ipam',
        pool: 'blue',
        nodeName: 'node-a',
        agentSocket: '/run/netlease/cni.sock',
        deleteQueue: '/var/lib/netlease/cni-del-queue',
      },
    ],
  });
  const before = {
    shim: stamp(shim),
    conf: stamp(conf),
    bin: readdirSync(n.binDir),
    net: readdirSync(n.confDir),
  };
  expect([before.shim.mode, before.conf.mode]).toEqual([0o755, 0o644]);

  const second = await n.run(['--config', config], { NETLEASE_NODE_NAME: 'node-a' });
  expect({ code: second.exitCode, out: lines(second.stdout) }).toEqual({
    code: 0,
    out: [`unchanged ${shim}`, `unchanged ${conf}`],
  });
  const after = {
    shim: stamp(shim),
    conf: stamp(conf),
    bin: readdirSync(n.binDir),
    net: readdirSync(n.confDir),
  };
  expect(after).toEqual(before);

  // A flag changes one field: only the conflist is rewritten (a new inode, renamed in).
  const third = await n.run(['--config', config, '--pool', 'green'], { NETLEASE_NODE_NAME: 'node-a' });
  expect(lines(third.stdout)).toEqual([`unchanged ${shim}`, `wrote ${conf}`]);
  const written = JSON.parse(readFileSync(conf, 'utf8')) as { plugins: { pool?: string }[] };
  expect(written.plugins[1]?.pool).toBe('green');
  expect(stamp(conf).ino).not.toBe(before.conf.ino);
  expect(readdirSync(n.confDir)).toEqual(['10-netlease.conflist']);
});

test('a changed shim replaces the installed one by rename, even while the old one runs', async () => {
  const n = node();
  const shim = join(n.binDir, 'netlease');
  // An ELF that keeps running stands for a plugin the runtime is executing during the upgrade.
  copyFileSync('/bin/sleep', n.source);
  expect((await n.run()).exitCode).toBe(0);
  const oldIno = statSync(shim).ino;
  const running = startTracked(shim, ['600'], { stdio: 'ignore' });
  try {
    expect(readlinkSync(`/proc/${running.pid}/exe`)).toBe(shim);
    // Writing in place is what must not happen: the kernel refuses it for a running program.
    expect(() => openSync(shim, 'r+')).toThrow(/ETXTBSY/);
    writeFileSync(n.source, STAND_IN);
    const upgrade = await n.run();
    expect({ code: upgrade.exitCode, err: upgrade.stderr }).toEqual({ code: 0, err: '' });
    expect(lines(upgrade.stdout)[0]).toMatch(/^copied /);
    expect(readFileSync(shim, 'utf8')).toBe(STAND_IN);
    expect(stamp(shim)).toMatchObject({ mode: 0o755 });
    expect(statSync(shim).ino).not.toBe(oldIno);
    expect(readlinkSync(`/proc/${running.pid}/exe`)).toBe(`${shim} (deleted)`); // the old inode runs on
    expect(readdirSync(n.binDir).sort()).toEqual(['loopback', 'netlease']); // no temp file left
  } finally {
    await stopPid(running.pid);
  }
});

test('cnitool accepts the conflist and runs loopback, then netlease with its settings', async () => {
  const n = node();
  expect((await n.run(['--node-name', 'node-b'])).exitCode).toBe(0);
  const ns = futureNetns('install');
  await ns.create(); // its lo is down: the loopback plugin brings it up
  const lo = async () => (await ns.links()).find((l) => l.ifname === 'lo')?.flags ?? [];
  const setup = { binDir: n.binDir, confDir: n.confDir };
  const env = { NLT_RECORD: n.record };

  const add = await cnitool(setup, 'add', 'netlease', ns.path, { env });
  expect({ code: add.exitCode, err: add.stderr }).toEqual({ code: 0, err: '' });
  expect(JSON.parse(add.stdout)).toMatchObject({ ips: [{ address: '198.18.0.5/32' }] });
  expect(await lo()).toContain('UP');
  expect(JSON.parse(readFileSync(join(n.record, 'ADD.json'), 'utf8'))).toMatchObject({
    cniVersion: '1.1.0',
    name: 'netlease',
    type: 'netlease',
    mode: 'ptp',
    pool: 'default',
    nodeName: 'node-b',
    agentSocket: '/run/netlease/cni.sock',
    deleteQueue: '/var/lib/netlease/cni-del-queue',
    prevResult: { interfaces: [{ name: 'lo' }] }, // loopback ran first in the chain
  });

  const del = await cnitool(setup, 'del', 'netlease', ns.path, { env });
  expect({ code: del.exitCode, err: del.stderr }).toEqual({ code: 0, err: '' });
  expect(JSON.parse(readFileSync(join(n.record, 'DEL.json'), 'utf8'))).toMatchObject({ type: 'netlease' });
  expect(await lo()).not.toContain('UP');
});

test('bad input names the field and installs nothing', async () => {
  const n = node();
  const cases: [string[], RegExp][] = [
    [['--mode', 'bridge'], /^install-cni: invalid options: network\.mode: /],
    [['--bin-dir', 'opt/cni/bin'], /^install-cni: invalid options: binDir: must be an absolute path/],
    [['--conf-dir', join(n.root, 'missing')], /^install-cni: invalid options: confDir: no such directory/],
    [['--source', join(n.root, 'missing')], /^install-cni: invalid options: source: no such file/],
    [['--node-name', 'Node_A'], /^install-cni: invalid options: network\.nodeName: must be a DNS subdomain/],
    [['--bogus', 'x'], /^install-cni: Unknown option '--bogus'/],
  ];
  for (const [args, message] of cases) {
    const result = await n.run(args);
    expect({ args, code: result.exitCode, out: result.stdout }).toEqual({ args, code: 2, out: '' });
    expect(result.stderr).toMatch(message);
  }
  const config = join(n.root, 'bad.yaml');
  writeFileSync(config, 'network:\n  agentSockt: /run/x.sock\n');
  const typo = await n.run(['--config', config]);
  expect(typo.exitCode).toBe(2);
  expect(typo.stderr).toMatch(/invalid options: network: Unrecognized key: "agentSockt"/);
  expect([readdirSync(n.binDir), readdirSync(n.confDir)]).toEqual([['loopback'], []]);
});

test("a --config's network may name its Temporal and an older CNI version; an unknown version is refused", async () => {
  const n = node();
  const bad = join(n.root, 'old.yaml');
  writeFileSync(bad, 'network:\n  cniVersion: 0.2.0\n');
  const refused = await n.run(['--config', bad]);
  expect(refused.exitCode).toBe(2);
  expect(refused.stderr).toMatch(/^install-cni: invalid options: network\.cniVersion: /);
  expect(readdirSync(n.confDir)).toEqual([]);

  const config = join(n.root, 'cluster.yaml');
  const temporal = { address: '127.0.0.1:17233', taskQueue: 'tq-cluster' };
  writeFileSync(config, JSON.stringify({ network: { cniVersion: '1.0.0', temporal } }));
  expect((await n.run(['--config', config])).exitCode).toBe(0);
  const written = JSON.parse(readFileSync(join(n.confDir, '10-netlease.conflist'), 'utf8')) as {
    cniVersion: string;
    plugins: Array<{ type: string; temporal?: object }>;
  };
  expect(written.cniVersion).toBe('1.0.0');
  expect(written.plugins.find((p) => p.type === 'netlease')?.temporal).toEqual({
    ...temporal,
    namespace: 'default',
  });
});
