// The processes a node with netlease runs, each its own process so CPU and memory are its own:
// a Temporal server (temporal-servers.ts), etcd + kube-apiserver, one control worker or more on one
// task queue, and the node agent (CNI API and ptp activities), all tracked by PID; logs and configs
// in one temp dir.
import { randomBytes } from 'node:crypto';
import { mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NodeAgentConfigSchema } from '../../domain/config';
import { CONTROL_WORKER_NODE_FLAGS, NODE_AGENT_NODE_FLAGS, PROCESS_ENV } from '../../worker/process-flags';
import { connectKube, type KubeClients } from '../../kubernetes/kube';
import { startLocalKube, type LocalKube } from '../../tools/kube-apiserver';
import { startTracked, stopPid, waitFor, type Tracked } from '../../tools/processes';
import type { BenchTemporal, TemporalKind } from './temporal-servers';
import { applyWhereaboutsCrds } from './whereabouts-crds';

/**
 * On a server the bench did not start (NETLEASE_BENCH_TEMPORAL), workflow ids of an earlier run
 * live on: this run's task queue, pool and nodes get a suffix of their own.
 */
const RUN = process.env.NETLEASE_BENCH_TEMPORAL ? `-${randomBytes(3).toString('hex')}` : '';
export const NODE = `bench-node${RUN}`;
/** A second node whose agent pre-produces ptp leases (one preProduce section per agent). */
export const PTP_NODE = `bench-node-ptp${RUN}`;
export const PTP_NETWORK = 'bench-ptp';
export const POOL = `bench${RUN}`;
/** The CNI network name of the ipam rows; pre-produced leases are started for it. */
export const NETWORK = 'bench';
export const TASK_QUEUE = `bench${RUN}`;

/** The long-lived processes by name: the server's, etcd, apiserver, control (control2, …), agent. */
export type StackPids = Record<'etcd' | 'apiserver' | 'control' | 'agent', number> & Record<string, number>;

export interface BenchStack {
  dir: string;
  temporal: BenchTemporal;
  kube: LocalKube;
  clients: KubeClients;
  control: Tracked;
  /** Control workers started besides `control` (addControlWorker), on the same task queue. */
  moreControls: Tracked[];
  agent: Tracked;
  agentSocket: string;
  deleteQueue: string;
  /** Where the agent holds the offers of pre-produced leases. */
  offerDir: string;
  /** The ptp node's agent (pre-produces ptp leases), when the agent's schema knows preProduce. */
  ptp?: { agent: Tracked; agentSocket: string; deleteQueue: string; offerDir: string };
  /** Why pre-produced ADDs cannot be measured, or undefined when the agent pre-produces. */
  preProduceMissing?: string;
  /** The long-lived processes, by name. */
  pids(): StackPids;
  /** One more control worker process on the task queue (`control2`, `control3`, … in pids()). */
  addControlWorker(): Promise<void>;
  /** Stops the newest added control worker (SIGTERM: the SDK drains it and tells the server). */
  removeControlWorker(): Promise<void>;
  stop(): Promise<void>;
}

/** The compiled tree (dist/). */
const DIST = join(__dirname, '..', '..');

/**
 * NETLEASE_BENCH_PROFILE=<dir>: the control worker and the node agents write V8 CPU profiles there
 * when they stop (one per thread; the control worker's workflow thread is its second).
 */
const PROFILE_DIR = process.env.NETLEASE_BENCH_PROFILE;

/** NETLEASE_BENCH_LEAN_SDK=1: the control workers without the SDK's promise hook and VM timeout (lean-sdk.ts). */
const LEAN_SDK = process.env.NETLEASE_BENCH_LEAN_SDK === '1';

/** `node <entry> --config <file>`, output to `<dir>/<name>.log`; resolves once `ready` is logged. */
async function startNodeProcess(
  dir: string,
  name: string,
  [flags, entry]: [string[], string],
  config: object,
  ready: string,
) {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(config, null, 2));
  const log = join(dir, `${name}.log`);
  const fd = openSync(log, 'a');
  const profile = PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${join(PROFILE_DIR, name)}`] : [];
  const lean = LEAN_SDK && name.startsWith('control') ? ['-r', join(__dirname, 'lean-sdk.js')] : [];
  const tracked = startTracked(
    process.execPath,
    [...flags, ...profile, ...lean, join(DIST, entry), '--config', file],
    {
      stdio: ['ignore', fd, fd],
      env: { ...process.env, ...PROCESS_ENV },
    },
  );
  let exited = false;
  void tracked.exited.then(() => (exited = true));
  await waitFor(() => exited || readFileSync(log, 'utf8').includes(ready), 60000, 100);
  if (exited || !readFileSync(log, 'utf8').includes(ready)) {
    await stopPid(tracked.pid);
    throw new Error(`${name} did not start: ${readFileSync(log, 'utf8').slice(-2000)}`);
  }
  return tracked;
}

/**
 * The watches as before issue 19's fix, for before/after: NETLEASE_BENCH_WATCH_CONCURRENCY=1 (one
 * event at a time), NETLEASE_BENCH_WATCH_LEADERSHIP=0 (every control worker watches).
 */
const WATCH_SETTINGS = {
  ...(process.env.NETLEASE_BENCH_WATCH_CONCURRENCY
    ? { watchConcurrency: Number(process.env.NETLEASE_BENCH_WATCH_CONCURRENCY) }
    : {}),
  ...(process.env.NETLEASE_BENCH_WATCH_LEADERSHIP === '0' ? { watchLeadership: false } : {}),
};

function controlConfig(address: string, kubeconfig: string): object {
  return {
    temporal: { address, taskQueue: TASK_QUEUE },
    pools: [{ name: POOL, cidrs: ['198.18.0.0/16'] }],
    // No reconciler pass during the run: the bench's pod-less leases stay open until it ends.
    kubernetes: { kubeconfig, reconcileIntervalSeconds: 3600, ...WATCH_SETTINGS },
  };
}

interface AgentSetup {
  address: string;
  kubeconfig: string;
  hostNetns?: string;
  dir: string;
}

/** Where an agent's files go: `<dir>/<prefix>cni.sock` and so on. */
const agentFiles = (dir: string, prefix: string) => ({
  agentSocket: join(dir, `${prefix}cni.sock`),
  deleteQueue: join(dir, `${prefix}del-queue`),
  offerDir: join(dir, `${prefix}offers`),
});

/** The pre-produce section is only written when the agent's schema knows it (it is strict). */
function agentConfig(stack: AgentSetup, node = NODE, mode: 'ipam' | 'ptp' = 'ipam') {
  const preProduce = 'preProduce' in NodeAgentConfigSchema.shape;
  const files = agentFiles(stack.dir, node === NODE ? '' : 'ptp-');
  const base = {
    // The control plane's task queue: pre-produced leases must start where its worker polls.
    temporal: { address: stack.address, taskQueue: TASK_QUEUE },
    nodeName: node,
    hostNetns: stack.hostNetns,
    cniSocket: files.agentSocket,
    deleteQueue: files.deleteQueue,
  };
  if (!preProduce) return { config: base, missing: "the node agent's config has no preProduce section" };
  const extra = {
    kubernetes: { kubeconfig: stack.kubeconfig },
    offerDir: files.offerDir,
    preProduce: { network: mode === 'ipam' ? NETWORK : PTP_NETWORK, pool: POOL, mode, ifName: 'eth0' },
  };
  return { config: { ...base, ...extra }, missing: undefined };
}

/** The ptp node's agent; only with preProduce and a host namespace (root). */
async function startPtpAgent(setup: AgentSetup, clients: KubeClients) {
  const { config, missing } = agentConfig(setup, PTP_NODE, 'ptp');
  if (missing || !setup.hostNetns) return undefined;
  await clients.core.createNode({ body: { metadata: { name: PTP_NODE } } });
  const ready = '"msg":"node agent started"';
  const agent = await startNodeProcess(
    setup.dir,
    'ptp-agent',
    [NODE_AGENT_NODE_FLAGS, 'worker/agent/node-agent.js'],
    config,
    ready,
  );
  return { agent, ...agentFiles(setup.dir, 'ptp-') };
}

const startControl = (dir: string, name: string, address: string, kubeconfig: string) =>
  startNodeProcess(
    dir,
    name,
    [CONTROL_WORKER_NODE_FLAGS, 'worker/control/control.js'],
    controlConfig(address, kubeconfig),
    '"msg":"control worker started"',
  );

export async function startStack(
  dir: string,
  hostNetns: string | undefined,
  tuned: boolean,
  server: TemporalKind,
): Promise<BenchStack> {
  mkdirSync(dir, { recursive: true });
  const [temporal, kube] = await Promise.all([
    server.start(dir, tuned),
    startLocalKube({ dir: join(dir, 'kube'), logFd: openSync(join(dir, 'kube.log'), 'a') }),
  ]);
  const started: Tracked[] = [...kube.processes];
  const moreControls: Tracked[] = [];
  const stopAll = async () => {
    for (const p of [...started, ...moreControls].reverse()) await stopPid(p.pid);
    await temporal.stop();
  };
  try {
    const clients = await connectKube(kube.kubeconfig);
    await clients.core.createNode({ body: { metadata: { name: NODE } } });
    await applyWhereaboutsCrds(clients);
    const control = await startControl(dir, 'control', temporal.address, kube.kubeconfig);
    started.push(control);
    const agentSetup = { address: temporal.address, kubeconfig: kube.kubeconfig, hostNetns, dir };
    const { config, missing } = agentConfig(agentSetup);
    const agent = await startNodeProcess(
      dir,
      'node-agent',
      [NODE_AGENT_NODE_FLAGS, 'worker/agent/node-agent.js'],
      config,
      '"msg":"node agent started"',
    );
    started.push(agent);
    const ptp = await startPtpAgent(agentSetup, clients);
    if (ptp) started.push(ptp.agent);
    return {
      dir,
      temporal,
      kube,
      clients,
      control,
      moreControls,
      agent,
      agentSocket: join(dir, 'cni.sock'),
      deleteQueue: join(dir, 'del-queue'),
      offerDir: join(dir, 'offers'),
      ptp,
      preProduceMissing: missing,
      pids: () => ({
        ...temporal.pids,
        // startLocalKube lists the apiserver, then etcd.
        etcd: kube.pids[1] ?? 0,
        apiserver: kube.pids[0] ?? 0,
        control: control.pid,
        ...Object.fromEntries(moreControls.map((c, i) => [`control${i + 2}`, c.pid])),
        agent: agent.pid,
      }),
      async addControlWorker() {
        const name = `control${moreControls.length + 2}`;
        moreControls.push(await startControl(dir, name, temporal.address, kube.kubeconfig));
      },
      async removeControlWorker() {
        const newest = moreControls.pop();
        if (newest) await stopPid(newest.pid);
      },
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
