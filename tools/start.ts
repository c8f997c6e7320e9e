// `npm start`: Temporal dev server (UI, SQLite state that survives restarts) and the control
// worker, tracked by PID; Ctrl-C stops them in reverse order.
import { mkdirSync, openSync, readFileSync, existsSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfigFile } from '../worker/config-file';
import { startTracked, stopPid, isAlive, type Tracked } from './processes';
import { startDevServer } from './temporal-server';

const root = join(__dirname, '..', '..');
const stateDir = join(root, '.netlease');
const pidFile = join(stateDir, 'pids.json');

/** Stops what a previous `npm start` left running (checked by PID and command line). */
async function stopLeftovers(): Promise<void> {
  if (!existsSync(pidFile)) return;
  const pids = JSON.parse(readFileSync(pidFile, 'utf8')) as number[];
  for (const pid of pids) {
    const cmdline = isAlive(pid) ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : '';
    if (/temporal|netlease|control\.js/.test(cmdline)) {
      console.log(`netlease: stopping pid ${pid} left by a previous run`);
      await stopPid(pid);
    }
  }
  rmSync(pidFile, { force: true });
}

async function main(): Promise<void> {
  mkdirSync(stateDir, { recursive: true });
  await stopLeftovers();
  const configPath = process.env.NETLEASE_CONFIG ?? join(root, 'deploy', 'dev', 'netlease.yaml');
  const config = loadConfigFile(configPath);
  const [host, port] = config.temporal.address.split(':');
  if (host !== '127.0.0.1' && host !== 'localhost')
    throw new Error('npm start runs its own dev server on loopback only');
  const uiPort = Number(process.env.NETLEASE_UI_PORT ?? 8233);
  const log = openSync(join(stateDir, 'temporal.log'), 'a');

  console.log(
    `netlease: starting Temporal dev server on ${config.temporal.address} (state in .netlease/temporal.db)`,
  );
  const server = await startDevServer({
    port: Number(port),
    uiPort,
    dbFile: join(stateDir, 'temporal.db'),
    logFd: log,
  });
  const children: Tracked[] = [server.process];
  const save = () => writeFileSync(pidFile, JSON.stringify(children.map((c) => c.pid)));
  save();

  console.log('netlease: starting the control worker');
  const control = startTracked(process.execPath, [
    join(root, 'dist', 'worker', 'control.js'),
    '--config',
    configPath,
  ]);
  children.push(control);
  save();

  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`\nnetlease: ${why}; stopping ${children.map((c) => c.pid).join(', ')}`);
    for (const child of [...children].reverse()) await stopPid(child.pid);
    rmSync(pidFile, { force: true });
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('interrupted'));
  process.on('SIGTERM', () => void stop('terminated'));
  for (const child of children) void child.exited.then((code) => stop(`pid ${child.pid} exited (${code})`));

  console.log(`
netlease is running.
  Temporal UI:  ${server.uiUrl}/namespaces/${config.temporal.namespace}/workflows
  Temporal:     ${config.temporal.address}  task queue ${config.temporal.taskQueue}

Try the CNI shim by hand (another terminal, in this directory):
  CNI_COMMAND=ADD CNI_CONTAINERID=demo1 CNI_NETNS=/var/run/netns/demo1 CNI_IFNAME=eth0 \\
  CNI_ARGS='K8S_POD_NAMESPACE=default;K8S_POD_NAME=demo;K8S_POD_UID=0b1c2d3e-0000-4000-8000-000000000001' \\
    ./bin/netlease < deploy/dev/netconf.json

Then open the UI and filter:  LeasePhase = "Active"
Ctrl-C stops everything.`);
}

main().catch((err: unknown) => {
  console.error(`netlease: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
