// `npm start`: Temporal dev server (UI, SQLite state that survives restarts), a local Kubernetes
// API, the control worker and this machine's node agent, tracked by PID; Ctrl-C stops them in
// reverse order. One run per state directory: a second refuses while the first runs. With
// `--cluster` (npm start -- --cluster) the cluster has the real controllers and a real node (two
// with `--nodes 2`). With `--temporal production` Temporal is the production-shaped server on
// PostgreSQL (tools/temporal-production.ts, state in .netlease/temporal-production) instead.
import { mkdirSync, openSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { hostNodeName } from '../kubernetes/node-name';
import { connectKube, isNotFound, kubeCall } from '../kubernetes/kube';
import type { NetleaseConfig } from '../domain/config';
import { loadConfigFile } from '../worker/config-file';
import { CONTROL_WORKER_NODE_FLAGS, PROCESS_ENV } from '../worker/process-flags';
import { startDevNode } from './dev-node';
import { startLocalKube } from './kube-apiserver';
import { runningLauncher, stopLeftovers, stopPid, thisProcess, type Tracked } from './processes';
import { startReadable } from './readable-log';
import { RELEASE, RELEASE_NAMESPACE } from './in-cluster';
import {
  clusterHelp,
  startClusterRun,
  startInClusterRun,
  type ClusterRun,
  type InClusterRun,
} from './start-cluster';
import { parseStartFlags, type StartFlags } from './start-flags';
import { supervise, type Supervised } from './supervise';
import { runBootstrap } from './set-up';
import { startDevServer } from './temporal-server';
import { startProductionTemporal } from './temporal-production';
import { connectClient } from '../temporal/connection';
import { poolIsServed } from '../temporal/pools';
import { waitFor } from './processes';

const root = join(__dirname, '..', '..');
const stateDir = process.env.NETLEASE_STATE_DIR ?? join(root, '.netlease');
const pidFile = join(stateDir, 'pids.json');

async function main(): Promise<void> {
  const flags = parseStartFlags(process.argv.slice(2));
  mkdirSync(stateDir, { recursive: true });
  refuseSecondRun();
  await stopLeftovers(pidFile);
  const launcher = thisProcess();
  const record = (pids: number[]) => writeFileSync(pidFile, JSON.stringify({ launcher, pids }));
  record([]); // from now on a second run finds this one
  const configPath = process.env.NETLEASE_CONFIG ?? join(root, 'deploy', 'dev', 'netlease.yaml');
  const config = loadConfigFile(configPath);
  const [host, port] = config.temporal.address.split(':');
  if (host !== '127.0.0.1' && host !== 'localhost')
    throw new Error('npm start runs its own dev server on loopback only');
  const log = openSync(join(stateDir, 'temporal.log'), 'a');
  const server = await startTemporal(flags.temporal, config, Number(port), log);
  const children: Tracked[] = server.processes;
  const workers: Supervised[] = [];
  const running = () => [...children, ...workers.map((w) => w.current())];
  const save = () => record(running().map((c) => c.pid));
  save();

  let clusterRun: ClusterRun | undefined;
  if (flags.cluster) {
    const clusterLog = openSync(join(stateDir, 'cluster.log'), 'a');
    const started = (processes: Tracked[]) => {
      children.push(...processes);
      save();
    };
    if (flags.inCluster) {
      const run = await startInClusterRun(root, stateDir, config, clusterLog, flags.nodes, started);
      await waitAsPods(run, server.uiUrl, config, server.cli, children, async (why) => {
        console.log(`\nnetlease: ${why}; stopping the cluster and Temporal`);
        await run.cluster.stop();
        for (const child of [...children].reverse()) await stopPid(child.pid);
        rmSync(pidFile, { force: true });
        process.exit(0);
      });
      return;
    }
    clusterRun = await startClusterRun(root, stateDir, config, clusterLog, flags.nodes, started);
  }
  const effective = clusterRun?.effective ?? (await withKubernetes(config, log, children, save));
  const effectivePath = join(stateDir, 'netlease.effective.json');
  writeFileSync(effectivePath, JSON.stringify(effective, null, 2));

  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    for (const worker of workers) worker.stop();
    const all = running();
    console.log(`\nnetlease: ${why}; stopping ${all.map((c) => c.pid).join(', ')}`);
    for (const worker of [...workers].reverse()) await stopPid(worker.current().pid);
    await clusterRun?.cluster.stop(); // also its containers, mounts and namespaces
    for (const child of all.reverse()) await stopPid(child.pid);
    rmSync(pidFile, { force: true });
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('interrupted'));
  process.on('SIGTERM', () => void stop('terminated'));
  process.on('SIGHUP', () => void stop('hung up'));
  // The servers hold the state: one of them gone is the end of this run (the state stays on disk).
  for (const child of children) void child.exited.then((code) => stop(`pid ${child.pid} exited (${code})`));
  // A crashed worker is restarted.
  const events = { restarted: save, gaveUp: (reason: string) => void stop(reason) };

  console.log('netlease: starting the control worker');
  const controlArgs = [
    ...CONTROL_WORKER_NODE_FLAGS,
    join(root, 'dist', 'worker', 'control', 'control.js'),
    '--config',
    effectivePath,
  ];
  const controlEnv = { ...process.env, ...PROCESS_ENV };
  workers.push(
    supervise(
      'control worker',
      () => startReadable(process.execPath, controlArgs, { env: controlEnv }),
      events,
    ),
  );
  save();
  await untilPoolsOpen(effective);
  if (clusterRun) {
    for (const agent of clusterRun.agents)
      workers.push(supervise(`node agent of ${agent.nodeName}`, agent.start, events));
    save();
    console.log(`\nnetlease is running with a real node.
  Temporal UI:  ${uiLine(server.uiUrl, config)}
${clusterHelp(clusterRun.cluster)}
Temporal CLI: ${linkCli(server.cli)}
Ctrl-C (or kill -INT ${process.pid}, or the npm process) stops everything; a crashed worker is restarted.`);
    return;
  }
  const node = await startDevNode(root, stateDir, config.temporal, effective.kubernetes?.kubeconfig);
  workers.push(supervise('node agent', node.startAgent, events));
  save();

  console.log(`
netlease is running.
  Temporal UI:  ${uiLine(server.uiUrl, config)}
  Temporal:     ${config.temporal.address}  task queue ${config.temporal.taskQueue}

Try the CNI shim by hand (another terminal, in this directory):
  CNI_COMMAND=ADD CNI_CONTAINERID=demo1 CNI_NETNS=/var/run/netns/demo1 CNI_IFNAME=eth0 \\
  CNI_ARGS='K8S_POD_NAMESPACE=default;K8S_POD_NAME=demo;K8S_POD_UID=0b1c2d3e-0000-4000-8000-000000000001' \\
    ./bin/netlease < deploy/dev/netconf.json

Then open the UI and filter:  LeasePhase = "Active"

A real interface with cnitool (ptp mode; host ends in ${node.hostNetns ?? 'this namespace'}):
  export NETCONFPATH=${node.cni.confDir} CNI_PATH=${node.cni.binDir} PATH=${node.cni.binDir}:$PATH
  ip netns add demo && cnitool add netlease-ptp /var/run/netns/demo && ip -n demo addr show eth0
Kubernetes:   ${effective.kubernetes?.kubeconfig} (node ${hostNodeName()} registered)
  node dist/tools/demo-pod.js create demo    # a pod on this node; prints the ADD to run
  node dist/tools/demo-pod.js running demo   # the lease goes Running
  node dist/tools/demo-pod.js delete demo    # the lease is released
Temporal CLI: ${linkCli(server.cli)}  (not on PATH; e.g. .netlease/bin/temporal workflow list)
Ctrl-C (or kill -INT ${process.pid}, or the npm process) stops everything; a crashed worker is restarted.`);
}

/** netlease runs as pods: nothing to supervise here; Ctrl-C (or a server gone) stops everything. */
async function waitAsPods(
  run: InClusterRun,
  uiUrl: string | undefined,
  config: NetleaseConfig,
  cli: string,
  children: Tracked[],
  stop: (why: string) => Promise<void>,
): Promise<void> {
  let stopping = false;
  const once = (why: string) => (stopping ? undefined : ((stopping = true), void stop(why)));
  process.on('SIGINT', () => once('interrupted'));
  process.on('SIGTERM', () => once('terminated'));
  process.on('SIGHUP', () => once('hung up'));
  for (const child of children) void child.exited.then((code) => once(`pid ${child.pid} exited (${code})`));
  console.log(`\nnetlease is running as pods (helm release ${RELEASE} in ${RELEASE_NAMESPACE}, image ${run.image.ref}).
  Temporal UI:  ${uiLine(uiUrl, config)}
${clusterHelp(run.cluster)}
  Its pods: the agent DaemonSet and the control Deployment in ${RELEASE_NAMESPACE}; values in ${run.valuesFile}.
Temporal CLI: ${linkCli(cli)}
Ctrl-C (or kill -INT ${process.pid}, or the npm process) stops everything.`);
}

/**
 * "Running" is said once the control worker has opened every pool: an ADD before that is answered
 * "try again later", and a user who tries one at once must not see that.
 */
async function untilPoolsOpen(config: Pick<NetleaseConfig, 'pools' | 'temporal'>): Promise<void> {
  const names = config.pools.map((p) => p.name);
  console.log(`netlease: waiting for the control worker to open its pools (${names.join(', ')})`);
  const client = await connectClient(config.temporal);
  try {
    const open = async () => (await Promise.all(names.map((n) => poolIsServed(client, n)))).every(Boolean);
    const opened = await waitFor(() => open().catch(() => false), 120_000, 250);
    if (!opened)
      throw new Error(`the control worker did not open its pools within 120 s (see its log above)`);
  } finally {
    await client.connection.close();
  }
}

interface StartedTemporal {
  cli: string;
  uiUrl?: string;
  /** Its processes, in start order (stopped in reverse). */
  processes: Tracked[];
}

/** The dev server (UI, SQLite state file) or the Temporal server on PostgreSQL (no UI). */
async function startTemporal(
  kind: StartFlags['temporal'],
  config: NetleaseConfig,
  port: number,
  log: number,
): Promise<StartedTemporal> {
  if (kind === 'production') {
    runBootstrap(root, '--production');
    console.log(
      `netlease: starting the Temporal server on PostgreSQL on ${config.temporal.address} (state in .netlease/temporal-production)`,
    );
    const production = await startProductionTemporal({
      dir: join(stateDir, 'temporal-production'),
      port,
      namespace: config.temporal.namespace,
      logFd: log,
    });
    return { cli: production.cli, processes: [production.postgres.process, production.server] };
  }
  console.log(
    `netlease: starting Temporal dev server on ${config.temporal.address} (state in .netlease/temporal.db)`,
  );
  const uiPort = Number(process.env.NETLEASE_UI_PORT ?? 8233);
  const dev = await startDevServer({ port, uiPort, dbFile: join(stateDir, 'temporal.db'), logFd: log });
  return { cli: dev.cli, uiUrl: dev.uiUrl, processes: [dev.process] };
}

const uiLine = (uiUrl: string | undefined, config: NetleaseConfig) =>
  uiUrl
    ? `${uiUrl}/namespaces/${config.temporal.namespace}/workflows`
    : 'none with --temporal production (netleasectl and the Temporal CLI below read the same leases)';

/**
 * A run whose launcher still runs owns the servers in the PID file: stopping them as leftovers
 * would pull them from under it. A stale record (launcher gone, PID reused) is cleaned as before.
 */
function refuseSecondRun(): void {
  const first = runningLauncher(pidFile);
  if (!first) return;
  throw new Error(
    `npm start is already running (pid ${first.pid}, state in ${stateDir}); it is left running. ` +
      `To stop it: Ctrl-C in its terminal, or kill -INT ${first.pid}`,
  );
}

/** `.netlease/bin/temporal` → the pinned CLI in the cache, so the docs' commands have one path. */
function linkCli(cli: string): string {
  const link = join(stateDir, 'bin', 'temporal');
  mkdirSync(dirname(link), { recursive: true });
  rmSync(link, { force: true });
  symlinkSync(cli, link);
  return link;
}

/**
 * Without a kubeconfig (config or KUBECONFIG), a local etcd + kube-apiserver in .netlease/kube,
 * with this machine registered as a Node.
 */
async function withKubernetes(config: NetleaseConfig, log: number, children: Tracked[], save: () => void) {
  const given = config.kubernetes?.kubeconfig ?? process.env.KUBECONFIG;
  if (given)
    return {
      ...config,
      kubernetes: { reconcileIntervalSeconds: 60, watch: true, ...config.kubernetes, kubeconfig: given },
    };
  console.log(
    'netlease: no kubeconfig given; starting a local etcd + kube-apiserver (state in .netlease/kube)',
  );
  const kube = await startLocalKube({ dir: join(stateDir, 'kube'), logFd: log });
  children.push(...kube.processes);
  save();
  const { core, timeouts } = await connectKube(kube.kubeconfig);
  const name = hostNodeName();
  const ms = timeouts.callSeconds * 1000;
  try {
    await kubeCall(`reading node ${name}`, ms, (options) => core.readNode({ name }, options));
  } catch (err) {
    if (!isNotFound(err)) throw err;
    const body = { metadata: { name } };
    await kubeCall(`creating node ${name}`, ms, (options) => core.createNode({ body }, options));
  }
  return {
    ...config,
    kubernetes: {
      reconcileIntervalSeconds: 60,
      watch: true,
      ...config.kubernetes,
      kubeconfig: kube.kubeconfig,
    },
  };
}

main().catch((err: unknown) => {
  console.error(`netlease: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
