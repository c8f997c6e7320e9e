// `npm run conformance`: Kubernetes' own conformance specs for pod networking (tools/
// conformance-specs) against netlease on the local cluster of `npm start -- --cluster --nodes 2`.
// It builds (once, cached) the pinned e2e.test and agnhost, packs agnhost and the framework's pause
// image and imports them into both nodes' containerd, then starts its own cluster: a Temporal dev
// server, two real nodes (tools/cluster), netlease's control worker and the two node agents, with
// state in .netlease/conformance (made afresh each run) and names, ports and a pool of its own, so
// it runs beside `npm start` and the tests. e2e.test runs against it with KUBE_TEST_REPO_LIST
// pointing the framework at the local images; a summary per spec is printed, everything stopped.
// netlease runs as pods installed by its Helm chart (tools/in-cluster), as an operator installs it;
// `--host-processes` runs its control worker and agents as processes of this machine instead;
// `--core` runs only the six specs the heavy pass of `npm test` runs (tools/conformance-specs).
// Usage: npm run conformance [-- --host-processes] [--core] [--no-bootstrap]   (its log: .netlease/conformance/e2e.log; exit 0 when all pass)
import { existsSync, mkdirSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { NetleaseConfigSchema } from '../domain/config';
import { ip } from '../kernel/ip';
import { CONTROL_WORKER_NODE_FLAGS, NODE_AGENT_NODE_FLAGS, PROCESS_ENV } from '../worker/process-flags';
import { agentConfigOf, startCluster, type LocalCluster } from './cluster';
import { ensureConformanceImages } from './conformance-images';
import { CORE_SPECS, focusOf, readResults, SPECS, summary } from './conformance-specs';
import { ensureHostNetns } from './dev-node';
import { installInCluster } from './in-cluster';
import { ensureNetleaseImage } from './netlease-image';
import { unmountUnder } from './mounts';
import { programPath } from './programs';
import {
  freePort,
  runningLauncher,
  startTracked,
  stopLeftovers,
  stopPid,
  thisProcess,
  waitFor,
  type Tracked,
} from './processes';
import { runBootstrap } from './set-up';
import { startDevServer, type DevServer } from './temporal-server';

const root = join(__dirname, '..', '..');
const stateDir = join(process.env.NETLEASE_STATE_DIR ?? join(root, '.netlease'), 'conformance');
const pidFile = join(stateDir, 'pids.json');
/** Its own pool, outside npm start's (198.18.0.0/16) and the tests' (198.19.0.0/17). */
const POOL = { name: 'conformance', cidrs: ['198.19.128.0/22', 'fd00:19:128::/64'] };
/** Each node's host namespace is `<prefix><node name>`, as the chart's nodeAgent.hostNetns names it. */
const HOST_NETNS_PREFIX = 'netlease-';
const NODES = [1, 2].map((i) => ({
  nodeName: `conformance-${i}`,
  hostNetns: `${HOST_NETNS_PREFIX}conformance-${i}`,
}));
const TASK_QUEUE = 'netlease-conformance';

/** The processes of this run, recorded so that a next run stops what a killed one left. */
function recorder(): { track(...processes: Tracked[]): void; all(): Tracked[] } {
  const tracked: Tracked[] = [];
  const launcher = thisProcess();
  const save = () => writeFileSync(pidFile, JSON.stringify({ launcher, pids: tracked.map((t) => t.pid) }));
  save();
  return {
    track(...processes) {
      tracked.push(...processes);
      save();
    },
    all: () => [...tracked],
  };
}

/** netlease's control worker on the cluster's pool and API. */
function startControlWorker(cluster: LocalCluster, temporalAddress: string, log: number): Tracked {
  const config = NetleaseConfigSchema.parse({
    temporal: { address: temporalAddress, taskQueue: TASK_QUEUE },
    pools: [POOL],
    kubernetes: { kubeconfig: cluster.kubeconfig, watch: true, reconcileIntervalSeconds: 60 },
  });
  const file = join(stateDir, 'netlease.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  const entry = join(root, 'dist', 'worker', 'control', 'control.js');
  return startTracked(process.execPath, [...CONTROL_WORKER_NODE_FLAGS, entry, '--config', file], {
    env: { ...process.env, ...PROCESS_ENV },
    stdio: ['ignore', log, log],
  });
}

/** Each node's agent, once its CNI socket is there. */
async function startAgents(cluster: LocalCluster, log: number): Promise<Tracked[]> {
  const entry = join(root, 'dist', 'worker', 'agent', 'node-agent.js');
  const agents = cluster.nodes.map((node) =>
    startTracked(process.execPath, [...NODE_AGENT_NODE_FLAGS, entry, '--config', agentConfigOf(node)], {
      env: { ...process.env, ...PROCESS_ENV },
      stdio: ['ignore', log, log],
    }),
  );
  for (const node of cluster.nodes)
    if (!(await waitFor(() => existsSync(node.agentSocket), 60_000, 200)))
      throw new Error(`the node agent of ${node.real.nodeName} did not serve ${node.agentSocket}`);
  return agents;
}

/** e2e.test with the focus, its output in e2e.log, its JSON report in report.json. */
function runE2e(kubeconfig: string, repoList: string, specs: readonly string[]): Tracked {
  const out = openSync(join(stateDir, 'e2e.log'), 'w');
  return startTracked(
    programPath('e2e.test'),
    [
      `--kubeconfig=${kubeconfig}`,
      `--ginkgo.focus=${focusOf(specs)}`,
      '--ginkgo.no-color',
      '--ginkgo.v',
      '--ginkgo.timeout=40m',
      `--ginkgo.json-report=${join(stateDir, 'report.json')}`,
      '--disable-log-dump',
      `--e2e-output-dir=${stateDir}`,
    ],
    { env: { ...process.env, KUBE_TEST_REPO_LIST: repoList }, stdio: ['ignore', out, out] },
  );
}

async function main(): Promise<void> {
  const started = Date.now();
  const specs = process.argv.includes('--core') ? CORE_SPECS : SPECS;
  mkdirSync(stateDir, { recursive: true });
  const first = runningLauncher(pidFile);
  if (first) throw new Error(`npm run conformance is already running (pid ${first.pid})`);
  await stopLeftovers(pidFile);
  // `--no-bootstrap`: npm test's bootstrap did it; run again mid-test it could rebuild dist/ under
  // the running tests (its stamp is older than a file a test wrote).
  if (!process.argv.includes('--no-bootstrap')) runBootstrap(root, '--conformance'); // also e2e.test, agnhost, curl and netcat-openbsd
  const clusterDir = join(stateDir, 'cluster');
  await unmountUnder(clusterDir); // a killed run's, before its directory goes
  rmSync(clusterDir, { recursive: true, force: true });
  mkdirSync(clusterDir, { recursive: true });
  const { images, repoList } = ensureConformanceImages(stateDir);
  // netlease as pods by its chart (the default), or as host processes (--host-processes).
  const netleaseImage = process.argv.includes('--host-processes') ? undefined : ensureNetleaseImage(root);
  const log = openSync(join(stateDir, 'cluster.log'), 'w');
  const run = recorder();
  let server: DevServer | undefined;
  let cluster: LocalCluster | undefined;
  let e2e: Tracked | undefined;
  let interrupted = false;
  const interrupt = () => {
    interrupted = true;
    if (e2e) void stopPid(e2e.pid);
  };
  process.on('SIGINT', interrupt);
  process.on('SIGTERM', interrupt);
  try {
    server = await startDevServer({ port: await freePort(), logFd: log });
    run.track(server.process);
    for (const { hostNetns } of NODES) await ensureHostNetns(hostNetns);
    const how = netleaseImage ? 'netlease as pods' : 'netlease as host processes';
    console.log(`netlease: starting the cluster (nodes ${NODES.map((n) => n.nodeName).join(', ')}; ${how})`);
    cluster = await startCluster({
      dir: clusterDir,
      nodes: NODES,
      temporal: { address: server.address, taskQueue: TASK_QUEUE },
      pool: POOL,
      logFd: log,
      ...(netleaseImage ? { asPods: { images: [netleaseImage] } } : {}),
    });
    run.track(...cluster.processes);
    if (netleaseImage) {
      console.log(`netlease: installing netlease as pods (helm, image ${netleaseImage.ref})`);
      await installInCluster({
        cluster,
        dir: clusterDir,
        image: netleaseImage,
        temporal: { address: server.address, taskQueue: TASK_QUEUE },
        pool: POOL,
        hostNetnsPrefix: HOST_NETNS_PREFIX,
        reconcileIntervalSeconds: 60,
        log: (line) => writeSync(log, `${line}\n`),
      });
    } else {
      run.track(startControlWorker(cluster, server.address, log));
      run.track(...(await startAgents(cluster, log)));
    }
    for (const node of cluster.nodes)
      for (const image of images) await node.real.containerd.ctr(['images', 'import', image.file]);
    if (interrupted) return;
    console.log(`netlease: running ${specs.length} specs of e2e.test (log: ${join(stateDir, 'e2e.log')})`);
    const e2eStarted = Date.now();
    e2e = runE2e(cluster.kubeconfig, repoList, specs);
    await e2e.exited;
    const results = readResults(join(stateDir, 'report.json'), specs);
    console.log(summary(results, (Date.now() - e2eStarted) / 1000));
    console.log(`netlease: npm run conformance took ${((Date.now() - started) / 1000).toFixed(0)} s in all`);
    process.exitCode = results.every((r) => r.state === 'passed') ? 0 : 1;
  } finally {
    // The agents and the control worker, then the cluster, then Temporal.
    const own = run.all().filter((p) => p !== server?.process && !cluster?.processes.includes(p));
    for (const p of own.reverse()) await stopPid(p.pid);
    await cluster?.stop();
    await server?.stop();
    for (const { hostNetns } of NODES)
      await ip(undefined, ['netns', 'del', hostNetns]).catch(() => undefined);
    rmSync(pidFile, { force: true });
  }
}

main().catch((err: unknown) => {
  console.error(`netlease: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
