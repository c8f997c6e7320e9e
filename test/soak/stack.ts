// The soak's stack, every part a real process tracked by PID: a Temporal dev server with a state
// file (a restart keeps it) behind a loopback proxy the soak can cut, etcd + kube-apiserver (a
// restart keeps etcd's data and the port), the control worker, and per node a node agent with its
// own host-side namespace, CNI socket, DEL queue and offer directory. Node i is in ptp mode unless
// i % 3 == 2 (ipam: no interface); even ptp nodes pre-produce their pods' leases.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NodeAgentConfigSchema } from '../../domain/config';
import { ip } from '../../kernel/ip';
import { connectKube, type KubeClients } from '../../kubernetes/kube';
import { startLocalKube, type LocalKube } from '../../tools/kube-apiserver';
import { freePort, startTracked, stopPid, waitFor, type Tracked } from '../../tools/processes';
import { startDevServer, type DevServer } from '../../tools/temporal-server';
import { NODE_AGENT_NODE_FLAGS, PROCESS_ENV } from '../../worker/process-flags';
import { startControlProcess } from '../harness/control-process';
import { NODE_AGENT_ENTRY } from '../harness/node-agent';
import { tcpProxy, type TcpProxy } from '../harness/tcp-proxy';

export const SOAK_POOL = 'soak';
const POOL_CIDRS = ['198.18.0.0/20', 'fd00:18::/64'];
const TASK_QUEUE = 'netlease-soak';

export type NodeMode = 'ptp' | 'ipam';

export interface SoakNode {
  readonly name: string;
  readonly mode: NodeMode;
  readonly preProduce: boolean;
  /** Changes when the node is replaced (a new machine, a new namespace). */
  hostNetns: string;
  readonly dir: string;
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

export class SoakStack {
  readonly taskQueue = TASK_QUEUE;
  server!: DevServer;
  proxy!: TcpProxy;
  kube!: LocalKube;
  kubeClients!: KubeClients;
  /** Straight to the server, not through the proxy: the checker and the workload's reads. */
  client!: Client;
  private connection!: Connection;
  control: Tracked | undefined;
  readonly nodes: SoakNode[] = [];
  private temporalPort = 0;
  private apiPort = 0;

  private constructor(
    readonly dir: string,
    readonly log: number,
  ) {}

  static async start(dir: string, nodeCount: number, log: number): Promise<SoakStack> {
    const stack = new SoakStack(dir, log);
    mkdirSync(dir, { recursive: true });
    stack.temporalPort = await freePort();
    stack.apiPort = await freePort();
    await stack.startTemporal();
    stack.proxy = await tcpProxy(stack.server.address);
    await stack.startKube();
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

  async startControl(): Promise<void> {
    const config = {
      temporal: { address: this.proxy.address, taskQueue: this.taskQueue },
      pools: [{ name: SOAK_POOL, cidrs: POOL_CIDRS }],
      reuseCooldownSeconds: 1,
      kubernetes: { kubeconfig: this.kube.kubeconfig, watch: true, reconcileIntervalSeconds: 10 },
      logLevel: 'warn' as const,
    };
    this.control = startControlProcess(config, join(this.dir, 'control.json'), (d) =>
      writeFileSync(this.log, d),
    );
  }

  async killControl(): Promise<void> {
    if (this.control) process.kill(this.control.pid, 'SIGKILL');
    await this.control?.exited;
    this.control = undefined;
  }

  private async makeNode(index: number): Promise<SoakNode> {
    const name = `soak-node-${index}`;
    const dir = join(this.dir, name);
    const mode: NodeMode = index % 3 === 2 ? 'ipam' : 'ptp';
    const paths = { cniSocket: join(dir, 'cni.sock'), deleteQueue: join(dir, 'del-queue') };
    const proxy = this.proxy;
    const taskQueue = this.taskQueue;
    const node: SoakNode = {
      name,
      mode,
      preProduce: mode === 'ptp' && index % 2 === 0,
      hostNetns: '',
      dir,
      agent: undefined,
      agentOutput: '',
      netconf: () => ({
        cniVersion: '1.1.0',
        name: 'soak',
        type: 'netlease',
        pool: SOAK_POOL,
        nodeName: name,
        mode,
        temporal: { address: proxy.address, taskQueue },
        timeoutSeconds: 10,
        agentSocket: paths.cniSocket,
        deleteQueue: paths.deleteQueue,
      }),
    };
    return node;
  }

  /** A fresh machine for the node: its disk, host namespace and Node object, then its agent. */
  async addNode(node: SoakNode): Promise<void> {
    rmSync(node.dir, { recursive: true, force: true });
    mkdirSync(node.dir, { recursive: true });
    node.hostNetns = `soakh-${randomBytes(4).toString('hex')}`;
    await ip(undefined, ['netns', 'add', node.hostNetns]);
    await ip(node.hostNetns, ['link', 'set', 'dev', 'lo', 'up']);
    await this.kubeClients.core.createNode({ body: { metadata: { name: node.name } } });
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
      temporal: { address: this.proxy.address, taskQueue: this.taskQueue },
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
    collect(node.agent, this.log, (text) => (node.agentOutput = (node.agentOutput + text).slice(-262_144)));
  }

  async killAgent(node: SoakNode): Promise<void> {
    const agent = node.agent;
    node.agent = undefined;
    if (!agent) return;
    process.kill(agent.pid, 'SIGKILL');
    await agent.exited;
  }

  /** Every process by PID, the nodes' namespaces and the sandboxes' (`sandboxes`) removed. */
  async stop(sandboxes: Iterable<string> = []): Promise<void> {
    for (const netns of sandboxes) await ip(undefined, ['netns', 'del', netns]).catch(() => undefined);
    for (const node of this.nodes) {
      if (node.agent) await stopPid(node.agent.pid);
      await ip(undefined, ['netns', 'del', node.hostNetns]).catch(() => undefined);
    }
    if (this.control) await stopPid(this.control.pid);
    await this.connection?.close();
    await this.proxy?.close();
    await this.kube?.stop();
    if (this.server) await stopPid(this.server.pid);
  }
}
