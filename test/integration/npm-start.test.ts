// `npm start`'s launcher (dist/tools/start.js) against a PID file in a temporary state directory:
// a run whose launcher still runs is refused and left alone; a stale record (launcher gone, or its
// PID now another program's) is cleaned up as before. The launcher is pointed at a Temporal address
// off loopback, which it refuses right after that step: no servers are started here.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cmdlineOf, isAlive, runToEnd, startTracked, stopPid, type Tracked } from '../../tools/processes';

const START = join(__dirname, '..', '..', 'tools', 'start.js');
const ROOT = join(__dirname, '..', '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'netlease-start-'));
const pidFile = join(dir, 'pids.json');
const config = join(dir, 'netlease.yaml');
const started: Tracked[] = [];

/** A process that idles until stopped; `name` ends its command line (e.g. to look like a server). */
function idle(name: string): Tracked {
  const tracked = startTracked(process.execPath, ['-e', 'setInterval(() => {}, 1000)', name]);
  started.push(tracked);
  return tracked;
}

const launch = (...args: string[]) =>
  runToEnd(process.execPath, [START, ...args], {
    env: { ...process.env, NETLEASE_STATE_DIR: dir, NETLEASE_CONFIG: config },
  });
const offLoopback = 'netlease: npm start runs its own dev server on loopback only';

beforeAll(() => {
  const dev = readFileSync(join(ROOT, 'deploy', 'dev', 'netlease.yaml'), 'utf8');
  writeFileSync(config, dev.replace('127.0.0.1:7233', '192.0.2.1:7233'));
});

afterAll(async () => {
  for (const tracked of started) await stopPid(tracked.pid);
  rmSync(dir, { recursive: true, force: true });
});

test('a second run while the first runs is refused, naming the first; the first keeps running', async () => {
  const first = idle('first-launcher');
  const server = idle('fake-temporal-server');
  const record = JSON.stringify({
    launcher: { pid: first.pid, cmdline: cmdlineOf(first.pid) },
    pids: [server.pid],
  });
  writeFileSync(pidFile, record);
  const second = await launch();
  expect(second.stderr).toBe(
    `netlease: npm start is already running (pid ${first.pid}, state in ${dir}); it is left running. ` +
      `To stop it: Ctrl-C in its terminal, or kill -INT ${first.pid}\n`,
  );
  expect(second.exitCode).toBe(1);
  expect(second.stdout).not.toContain('stopping pid');
  expect([isAlive(first.pid), isAlive(server.pid)]).toEqual([true, true]);
  expect(readFileSync(pidFile, 'utf8')).toBe(record);
});

test("a stale record is cleaned up: the launcher is gone, or its PID is another program's", async () => {
  for (const stale of ['gone', 'reused'] as const) {
    const launcher = stale === 'gone' ? idle('gone-launcher') : idle('another-program');
    const cmdline = stale === 'gone' ? cmdlineOf(launcher.pid) : `node\0${START}\0`;
    if (stale === 'gone') await stopPid(launcher.pid);
    const leftover = idle('fake-temporal-server');
    writeFileSync(
      pidFile,
      JSON.stringify({ launcher: { pid: launcher.pid, cmdline }, pids: [leftover.pid] }),
    );
    const run = await launch();
    expect({ stale, stdout: run.stdout, stderr: run.stderr }).toEqual({
      stale,
      stdout: `netlease: stopping pid ${leftover.pid} left by a previous run\n`,
      stderr: `${offLoopback}\n`, // past the check: it went on to read its config
    });
    expect(isAlive(leftover.pid)).toBe(false);
    if (stale === 'reused') expect(isAlive(launcher.pid)).toBe(true); // not in the record's pids
    // The new run recorded itself (and then failed on the config, leaving a stale record).
    expect(JSON.parse(readFileSync(pidFile, 'utf8'))).toEqual({
      launcher: { pid: expect.any(Number), cmdline: expect.stringContaining('start.js') },
      pids: [],
    });
  }
});

test('an older PID file (a bare array) still has its leftovers stopped', async () => {
  const leftover = idle('fake-temporal-server');
  writeFileSync(pidFile, JSON.stringify([leftover.pid]));
  const run = await launch();
  expect(run.stderr).toBe(`${offLoopback}\n`);
  expect(isAlive(leftover.pid)).toBe(false);
  expect(existsSync(pidFile)).toBe(true);
});

test('an unknown argument is refused before anything is read or started; --cluster [--nodes 2] and --temporal are known', async () => {
  rmSync(pidFile, { force: true });
  const known = '(known: --cluster, --cluster --nodes 2, --cluster --in-cluster, --temporal dev|production)';
  for (const [args, message] of [
    [['--clustr'], `netlease: unknown argument --clustr ${known}`],
    [['--temporal', 'postgres'], `netlease: unknown argument --temporal postgres ${known}`],
    [['--cluster', '--nodes', '3'], `netlease: unknown argument --nodes 3 ${known}`],
    [['--nodes', '2'], `netlease: --nodes needs --cluster ${known}`],
  ] as const) {
    const run = await launch(...args);
    expect(run.stderr).toBe(`${message}\n`);
    expect(run.exitCode).toBe(1);
    expect(existsSync(pidFile)).toBe(false);
  }
  // --cluster (and --nodes 2 with it) and --temporal are accepted: the run goes on to its config,
  // off loopback here.
  for (const args of [['--cluster'], ['--cluster', '--nodes', '2'], ['--temporal', 'production']]) {
    const cluster = await launch(...args);
    expect(cluster.stderr).toBe(`${offLoopback}\n`);
  }
});
