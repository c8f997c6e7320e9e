// The soak's stack, every part a real process tracked by PID: a Temporal dev server with a state
// file (a restart keeps it), etcd + kube-apiserver (a restart keeps etcd's data and the port), the
// control worker, and per node a node agent with its own host-side namespace, CNI socket, DEL
// queue and offer directory. Each link the soak can cut is a loopback proxy: every agent's and the
// control worker's to Temporal, and the control worker's to the kube-apiserver. Node i is in ptp
// mode unless i % 3 == 2 (ipam: no interface); even ptp nodes pre-produce their pods' leases.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NodeAgentConfigSchema, type PoolSpec } from '../../domain/config';
import { ip } from '../../kernel/ip';
import { connectKube, type KubeClients } from '../../kubernetes/kube';
import { startLocalKube, type LocalKube } from '../../tools/kube-apiserver';
import {
  freePort,
  runToEnd,
  startTracked,
  stopPid,
  waitFor,
  type Finished,
  type Tracked,
} from '../../tools/processes';
import { startDevServer, type DevServer } from '../../tools/temporal-server';
import { NODE_AGENT_NODE_FLAGS, PROCESS_ENV } from '../../worker/process-flags';
import { PAUSE_DIR_ENV, PAUSE_ENV } from '../../kernel/failpoint';
import { startControlProcess, type ControlProcess } from '../harness/control-process';
import { NODE_AGENT_ENTRY } from '../harness/node-agent';
import { tcpProxy, type TcpProxy } from '../harness/tcp-proxy';
import { isAnswer, retried } from './kube-retry';
import { SELECTED_POOL, SELECTED_POOL_CIDRS, ZONE_LABEL } from './pools';

export const SOAK_POOL = 'soak';
/** The SDK's default `isolateExecutionTimeout` (a workflow activation's wall-clock limit). */
const WORKFLOW_ACTIVATION_TIMEOUT_MS = 5000;
/** How soon after the thaw such an exit comes (the timer fires as the process runs again). */
const THAW_CRASH_WITHIN_MS = 5000;
const POOL_CIDRS = ['198.18.0.0/20', 'fd00:18::/64'];

const TASK_QUEUE = 'netlease-soak';
/** The watch leadership's Lease (durationSeconds): a SIGSTOP longer than this loses it. */
export const LEADERSHIP_SECONDS = 5;
/** Node and pool workflows continue-as-new often, so faults meet it (the pause point among them). */
const HISTORY_LIMIT = 400;

export type NodeMode = 'ptp' | 'ipam';

export interface SoakNode {
  readonly name: string;
  readonly mode: NodeMode;
  readonly preProduce: boolean;
  /** Zone b's nodes (the odd ones) carry the label SELECTED_POOL's node selector matches. */
  readonly zone: 'a' | 'b';
  /** Changes when the node is replaced (a new machine, a new namespace). */
  hostNetns: string;
  readonly dir: string;
  /** The agent's (and its runtime's) link to Temporal. */
  readonly link: TcpProxy;
  agent: Tracked | undefined;
  /** What the agent printed since it last started. */
  agentOutput: string;
  /** The network config the node's runtime hands the shim. */
  netconf(): Record<string, unknown>;
}

/** A process's output kept in memory (the last 256 KiB) and appended to the soak's log. */
function collect(tracked: Tracked, log: number, sink: (text: string) => void): void {
  for (const stream of [tracked.child.stdout, tracked.child.stderr])
    stream?.on('data', (d: Buffer) => {
      sink(d.toString());
      writeFileSync(log, d);
    });
}

/** Sends `name` to a process we started; one that already exited is no error. */
export function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

/** A pause point (kernel/failpoint) a process is started to stop at. */
export const pauseEnv = (step: string, dir: string): Record<string, string> => ({
  [PAUSE_ENV]: step,
  [PAUSE_DIR_ENV]: dir,
});

export class SoakStack {
  readonly taskQueue = TASK_QUEUE;
  server!: DevServer;
  /** The control worker's links: to Temporal, and to the kube-apiserver. */
  controlTemporal!: TcpProxy;
  controlKube!: TcpProxy;
  kube!: LocalKube;
  kubeClients!: KubeClients;
  /** Straight to the server, not through the proxy: the checker and the workload's reads. */
  client!: Client;
  private connection!: Connection;
  control: ControlProcess | undefined;
  /** The pool's CIDRs as the control worker is configured (an operator may add one). */
  poolCidrs = [...POOL_CIDRS];
  /** Processes that exited without the soak stopping them (each started again). */
  readonly crashes: string[] = [];
  /**
   * Control worker exits the SDK's workflow sandbox causes on a thaw after a freeze longer than
   * its 5-s workflow-activation timeout (docs/installing.md): counted apart, each started again.
   */
  readonly thawCrashes: string[] = [];
  /** pid → when it was thawed after a freeze longer than the workflow-activation timeout. */
  private readonly thawedAt = new Map<number, number>();
  private stopping = false;
  /** Where processes started at a pause point write its gate (kernel/failpoint). */
  readonly pauseDir: string;
  readonly nodes: SoakNode[] = [];
  private temporalPort = 0;
  private apiPort = 0;

  private constructor(
    readonly dir: string,
    readonly log: number,
  ) {
    this.pauseDir = join(dir, 'pauses');
  }

  static async start(dir: string, nodeCount: number, log: number): Promise<SoakStack> {
    const stack = new SoakStack(dir, log);
    mkdirSync(dir, { recursive: true });
    stack.temporalPort = await freePort();
    stack.apiPort = await freePort();
    await stack.startTemporal();
    stack.controlTemporal = await tcpProxy(stack.server.address);
    await stack.startKube();
    stack.controlKube = await tcpProxy(new URL(stack.kube.server).host);
    stack.connection = await Connection.connect({ address: stack.server.address });
    stack.client = new Client({ connection: stack.connection });
    await stack.startControl();
    for (let i = 0; i < nodeCount; i++) stack.nodes.push(await stack.makeNode(i));
    for (const node of stack.nodes) await stack.addNode(node);
    await stack.ready();
    return stack;
  }

  /** The control plane serves the pool and every agent its CNI socket (as a cluster comes up). */
  private async ready(): Promise<void> {
    const served = () =>
      this.client.workflow
        .getHandle(`pool/${SOAK_POOL}`)
        .describe()
        .then((d) => d.status.name === 'RUNNING')
        .catch(() => false);
    const sockets = () =>
      this.nodes.every((n) => existsSync((n.netconf() as { agentSocket: string }).agentSocket));
    if (!(await waitFor(async () => sockets() && (await served()), 60_000, 200)))
      throw new Error('the soak stack did not come up within 60 s (see soak.log)');
  }

  async startTemporal(): Promise<void> {
    this.server = await startDevServer({
      port: this.temporalPort,
      dbFile: join(this.dir, 'temporal.db'),
      logFd: this.log,
    });
  }

  async stopTemporal(): Promise<void> {
    await stopPid(this.server.pid);
  }

  async startKube(): Promise<void> {
    this.kube = await startLocalKube({ dir: join(this.dir, 'kube'), apiPort: this.apiPort, logFd: this.log });
    this.kubeClients ??= await connectKube(this.kube.kubeconfig);
  }

  async stopKube(): Promise<void> {
    await this.kube.stop();
  }

  /** Every link to Temporal: the control worker's and each agent's. */
  temporalLinks(): TcpProxy[] {
    return [this.controlTemporal, ...this.nodes.map((n) => n.link)];
  }

  /** The control worker's config; `pool` changes the pool's spec (an operator's edit). */
  controlConfig(pool: Partial<PoolSpec> = {}) {
    return {
      temporal: { address: this.controlTemporal.address, taskQueue: this.taskQueue },
      pools: [
        { name: SOAK_POOL, cidrs: this.poolCidrs, ...pool },
        {
          name: SELECTED_POOL,
          cidrs: SELECTED_POOL_CIDRS,
          nodeSelector: { matchLabels: { [ZONE_LABEL]: 'b' } },
        },
      ],
      reuseCooldownSeconds: 1,
      nodeHistoryLimit: HISTORY_LIMIT,
      kubernetes: {
        kubeconfig: this.controlKubeconfig(),
        watch: true,
        reconcileIntervalSeconds: 10,
        // A run the SDK's update order wedges (docs/testing.md) is ended in well under a minute, not
        // 6.5: a pod on a wedged node waits less than the workload's 120 s for its ADD.
        wedgedLeases: { failedTaskAttempts: 4 },
        watchLeadership: { durationSeconds: LEADERSHIP_SECONDS },
      },
      logLevel: 'warn' as const,
    };
  }

  /** The kubeconfig with the server behind the control worker's link. */
  private controlKubeconfig(): string {
    const file = join(this.dir, 'control-kubeconfig');
    const server = `https://${this.controlKube.address}`;
    writeFileSync(file, readFileSync(this.kube.kubeconfig, 'utf8').replace(this.kube.server, server));
    return file;
  }

  /** The control worker as `control` (the one running); `env`: a pause point. */
  async startControl(env: Record<string, string> = {}): Promise<void> {
    const control = this.startControlWith(this.controlConfig(), 'control.json', env);
    this.control = control;
    this.superviseExit(
      control,
      'control worker',
      control.output,
      () => this.control === control,
      () => {
        this.control = undefined;
        return () => (this.control ? Promise.resolve() : this.startControl());
      },
    );
  }

  /**
   * A process that exits without the soak stopping it crashed: it is recorded (a finding) and
   * started again a second later, as its Deployment or DaemonSet would.
   */
  private superviseExit(
    tracked: Tracked,
    what: string,
    output: () => string,
    current: () => boolean,
    forget: () => () => Promise<void>,
  ): void {
    void tracked.exited.then(async (code) => {
      if (!current() || this.stopping) return;
      const crash = `${what} ${tracked.pid} exited ${code}: ${output().slice(-1500)}`;
      (this.isThawCrash(tracked.pid, output()) ? this.thawCrashes : this.crashes).push(crash);
      const restart = forget();
      await new Promise((resolve) => setTimeout(resolve, 1000));
      if (!this.stopping) await restart();
    });
  }

  /** A process SIGCONT woke after `stoppedMs` stopped (process-faults' SIGSTOP). */
  thawed(pid: number, stoppedMs: number): void {
    if (stoppedMs > WORKFLOW_ACTIVATION_TIMEOUT_MS) this.thawedAt.set(pid, Date.now());
  }

  /**
   * Node 20 aborts ("async hook stack has become corrupted") when the SDK's timeout of a workflow
   * activation fires inside a promise callback (nodejs/node#38503): a freeze longer than the
   * timeout does it as the process thaws. Anything else, or later, is a crash of ours.
   */
  private isThawCrash(pid: number, output: string): boolean {
    const thawed = this.thawedAt.get(pid);
    return (
      thawed !== undefined &&
      Date.now() - thawed < THAW_CRASH_WITHIN_MS &&
      output.includes('async hook stack has become corrupted')
    );
  }

  /** Another control worker process with this config (not `control`): an operator's rollout. */
  startControlWith(
    config: ReturnType<SoakStack['controlConfig']>,
    file: string,
    env: Record<string, string> = {},
  ): ControlProcess {
    return startControlProcess(config, join(this.dir, file), (d) => writeFileSync(this.log, d), env);
  }

  async killControl(): Promise<void> {
    const control = this.control;
    this.control = undefined;
    if (!control) return;
    signal(control.pid, 'SIGCONT');
    signal(control.pid, 'SIGKILL');
    await control.exited;
  }

  /** SIGTERM: the control worker drains and stops (a rollout's restart). */
  async stopControl(): Promise<void> {
    const control = this.control;
    this.control = undefined;
    if (control) await stopPid(control.pid, 20_000);
  }

  /** The pinned Temporal CLI against the server (directly, as an operator's terminal). */
  temporalCli(args: string[]): Promise<Finished> {
    return runToEnd(this.server.cli, [...args, '--address', this.server.address], { timeoutMs: 60_000 });
  }

  private async makeNode(index: number): Promise<SoakNode> {
    const name = `soak-node-${index}`;
    const dir = join(this.dir, name);
    const mode: NodeMode = index % 3 === 2 ? 'ipam' : 'ptp';
    const paths = { cniSocket: join(dir, 'cni.sock'), deleteQueue: join(dir, 'del-queue') };
    const link = await tcpProxy(this.server.address);
    const taskQueue = this.taskQueue;
    const node: SoakNode = {
      name,
      mode,
      preProduce: mode === 'ptp' && index % 2 === 0,
      zone: index % 2 === 1 ? 'b' : 'a',
      hostNetns: '',
      dir,
      link,
      agent: undefined,
      agentOutput: '',
      netconf: () => ({
        cniVersion: '1.1.0',
        name: 'soak',
        type: 'netlease',
        pool: SOAK_POOL,
        nodeName: name,
        mode,
        temporal: { address: link.address, taskQueue },
        timeoutSeconds: 10,
        agentSocket: paths.cniSocket,
        deleteQueue: paths.deleteQueue,
      }),
    };
    return node;
  }

  /** A fresh machine for the node: its disk, host namespace and Node object, then its agent. */
  async addNode(node: SoakNode): Promise<void> {
    await this.registerNode(node);
    await this.newMachine(node);
  }

  /** The Node object, created (a new UID) by the machine's kubelet, with its zone's label. */
  async registerNode(node: SoakNode): Promise<void> {
    const labels = { [ZONE_LABEL]: node.zone };
    await retried('create node', () =>
      this.kubeClients.core.createNode({ body: { metadata: { name: node.name, labels } } }),
    );
  }

  /** The Node object deleted (its pods are the caller's). */
  async deleteNode(node: SoakNode): Promise<void> {
    await retried('delete node', () =>
      this.kubeClients.core.deleteNode({ name: node.name, gracePeriodSeconds: 0 }),
    ).catch((err: unknown) => {
      if (!isAnswer(err)) throw err;
    });
  }

  /** A new machine under the node's name: an empty disk, a host namespace, the agent. */
  async newMachine(node: SoakNode): Promise<void> {
    rmSync(node.dir, { recursive: true, force: true });
    mkdirSync(node.dir, { recursive: true });
    node.hostNetns = `soakh-${randomBytes(4).toString('hex')}`;
    await ip(undefined, ['netns', 'add', node.hostNetns]);
    await ip(node.hostNetns, ['link', 'set', 'dev', 'lo', 'up']);
    await this.startAgent(node);
  }

  /** The machine gone: its agent killed, its host namespace deleted (the Node object is the caller's). */
  async removeMachine(node: SoakNode): Promise<void> {
    await this.killAgent(node);
    await ip(undefined, ['netns', 'del', node.hostNetns]).catch(() => undefined);
  }

  async startAgent(node: SoakNode, env: Record<string, string> = {}): Promise<void> {
    const conflist = join(node.dir, 'soak.conflist');
    const { cniVersion, name, ...plugin } = node.netconf();
    writeFileSync(conflist, JSON.stringify({ cniVersion, name, plugins: [plugin] }));
    const settings = node.netconf() as { agentSocket: string; deleteQueue: string };
    const config = NodeAgentConfigSchema.parse({
      temporal: { address: node.link.address, taskQueue: this.taskQueue },
      nodeName: node.name,
      hostNetns: node.mode === 'ptp' ? node.hostNetns : undefined,
      cniSocket: settings.agentSocket,
      deleteQueue: settings.deleteQueue,
      offerDir: join(node.dir, 'offers'),
      kubernetes: { kubeconfig: this.kube.kubeconfig },
      ...(node.preProduce ? { preProduce: { network: 'soak', pool: SOAK_POOL, mode: 'ptp', conflist } } : {}),
      logLevel: 'warn',
    });
    const file = join(node.dir, 'node-agent.json');
    writeFileSync(file, JSON.stringify(config));
    node.agentOutput = '';
    node.agent = startTracked(
      process.execPath,
      [...NODE_AGENT_NODE_FLAGS, NODE_AGENT_ENTRY, '--config', file],
      {
        env: { ...process.env, ...PROCESS_ENV, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const agent = node.agent;
    collect(agent, this.log, (text) => (node.agentOutput = (node.agentOutput + text).slice(-262_144)));
    this.superviseExit(
      agent,
      `node agent of ${node.name}`,
      () => node.agentOutput,
      () => node.agent === agent,
      () => {
        node.agent = undefined;
        return () => (node.agent ? Promise.resolve() : this.startAgent(node));
      },
    );
  }

  async killAgent(node: SoakNode): Promise<void> {
    const agent = node.agent;
    node.agent = undefined;
    if (!agent) return;
    signal(agent.pid, 'SIGCONT');
    signal(agent.pid, 'SIGKILL');
    await agent.exited;
  }

  /** SIGTERM: the agent stops as a rolling update stops it. */
  async stopAgent(node: SoakNode): Promise<void> {
    const agent = node.agent;
    node.agent = undefined;
    if (agent) await stopPid(agent.pid, 20_000);
  }

  /** Every process by PID, the nodes' namespaces and the sandboxes' (`sandboxes`) removed. */
  async stop(sandboxes: Iterable<string> = []): Promise<void> {
    this.stopping = true;
    for (const netns of sandboxes) await ip(undefined, ['netns', 'del', netns]).catch(() => undefined);
    for (const node of this.nodes) {
      if (node.agent) signal(node.agent.pid, 'SIGCONT');
      if (node.agent) await stopPid(node.agent.pid);
      await ip(undefined, ['netns', 'del', node.hostNetns]).catch(() => undefined);
    }
    if (this.control) signal(this.control.pid, 'SIGCONT');
    if (this.control) await stopPid(this.control.pid);
    await this.connection?.close();
    for (const proxy of [this.controlTemporal, this.controlKube, ...this.nodes.map((n) => n.link)])
      await proxy?.close();
    await this.kube?.stop();
    if (this.server) await stopPid(this.server.pid);
  }
}
