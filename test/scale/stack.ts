// One size's stack: Temporal (the pinned dev server with a state file, or an existing server),
// etcd + kube-apiserver with N Node objects, the real control worker process (the soak's), and N
// simulated node agents in this process. Names carry a random suffix, so sizes can share a server.
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { poolWorkflowId } from '../../domain/ids';
import { connectKube, type KubeClients } from '../../kubernetes/kube';
import { startLocalKube, type LocalKube } from '../../tools/kube-apiserver';
import { freePort, freePortIn, stopPid, waitFor, type Tracked } from '../../tools/processes';
import { startProductionTemporal } from '../../tools/temporal-production';
import { startDevServer, type TemporalServer } from '../../tools/temporal-server';
import { startControlProcess } from '../harness/control-process';
import { startSimulatedAgents, type SimulatedAgents } from './agents';

/** Room for a thousand nodes' /26 and /120 blocks. */
const POOL_CIDRS = ['10.64.0.0/12', 'fd00:64::/64'];
/** The figures trigger the reconciler themselves; the schedule's own runs would land among them. */
const RECONCILE_INTERVAL_SECONDS = 86_400;
const NODE_WRITES_IN_FLIGHT = 16;

export interface ScaleStackOptions {
  dir: string;
  nodes: number;
  /** An existing Temporal server; omitted: a server of this stack's own, of the `server` kind. */
  temporal?: string;
  server?: 'dev' | 'production';
}

export class ScaleStack {
  readonly suffix = randomBytes(3).toString('hex');
  readonly taskQueue = `netlease-scale-${this.suffix}`;
  readonly pool = `scale-${this.suffix}`;
  readonly namespace = `scale-${this.suffix}`;
  readonly nodeNames: string[];
  server: TemporalServer | undefined;
  /** The production server's PostgreSQL, whose CPU is Temporal's too. */
  private postgresPid: number | undefined;
  kube!: LocalKube;
  kubeClients!: KubeClients;
  client!: Client;
  control!: Tracked;
  agents!: SimulatedAgents;
  private connection!: Connection;

  private constructor(
    readonly dir: string,
    readonly log: number,
    nodes: number,
  ) {
    this.nodeNames = Array.from({ length: nodes }, (_, i) => `scale-${this.suffix}-${i}`);
  }

  get address(): string {
    if (!this.server) throw new Error('no Temporal server');
    return this.server.address;
  }

  /** Processes whose resident memory and CPU the figures read, by name. */
  pids(): Record<string, number> {
    const [apiserver, etcd] = this.kube.pids;
    return {
      control: this.control.pid,
      ...(this.server ? { temporal: this.server.pid } : {}),
      ...(this.postgresPid ? { postgres: this.postgresPid } : {}),
      ...(apiserver ? { apiserver } : {}),
      ...(etcd ? { etcd } : {}),
      agents: process.pid,
    };
  }

  static async start(options: ScaleStackOptions): Promise<ScaleStack> {
    mkdirSync(options.dir, { recursive: true });
    const log = openSync(join(options.dir, 'stack.log'), 'a');
    const stack = new ScaleStack(options.dir, log, options.nodes);
    try {
      await stack.startParts(options.temporal, options.server ?? 'dev');
    } catch (err) {
      await stack.stop();
      throw err;
    }
    return stack;
  }

  private async startServer(kind: 'dev' | 'production'): Promise<TemporalServer> {
    if (kind === 'dev')
      return startDevServer({
        port: await freePort(),
        dbFile: join(this.dir, 'temporal.db'),
        logFd: this.log,
      });
    const dir = join(this.dir, 'temporal-production');
    const server = await startProductionTemporal({
      dir,
      port: await freePortIn(20000, 32000),
      logFd: this.log,
    });
    this.postgresPid = server.postgres.pid;
    return server;
  }

  private async startParts(temporal: string | undefined, kind: 'dev' | 'production'): Promise<void> {
    this.server = temporal ? undefined : await this.startServer(kind);
    const address = temporal ?? this.address;
    this.kube = await startLocalKube({ dir: join(this.dir, 'kube'), logFd: this.log });
    this.kubeClients = await connectKube(this.kube.kubeconfig);
    this.connection = await Connection.connect({ address });
    this.client = new Client({ connection: this.connection });
    await this.registerNodes();
    this.agents = await startSimulatedAgents(address, this.nodeNames);
    const config = {
      temporal: { address, taskQueue: this.taskQueue },
      pools: [{ name: this.pool, cidrs: POOL_CIDRS }],
      reuseCooldownSeconds: 1,
      kubernetes: {
        kubeconfig: this.kube.kubeconfig,
        watch: true,
        reconcileIntervalSeconds: RECONCILE_INTERVAL_SECONDS,
      },
      logLevel: 'warn' as const,
    };
    this.control = startControlProcess(config, join(this.dir, 'control.json'), (chunk) =>
      writeSync(this.log, chunk),
    );
    await this.ready();
  }

  /** The Node objects, as kubelets register them. */
  private async registerNodes(): Promise<void> {
    const queue = [...this.nodeNames];
    const lane = async () => {
      for (let name = queue.shift(); name; name = queue.shift())
        await this.kubeClients.core.createNode({ body: { metadata: { name } } });
    };
    await Promise.all(Array.from({ length: NODE_WRITES_IN_FLIGHT }, lane));
  }

  /** The control worker serves the pool (its first act), as before any ADD in a cluster. */
  private async ready(): Promise<void> {
    const served = () =>
      this.client.workflow
        .getHandle(poolWorkflowId(this.pool))
        .describe()
        .then((d) => d.status.name === 'RUNNING')
        .catch(() => false);
    if (!(await waitFor(served, 120_000, 200)))
      throw new Error(`the control worker did not start pool/${this.pool} within 120 s (see stack.log)`);
  }

  /** Every process by PID, the simulated agents and the connections. */
  async stop(): Promise<void> {
    if (this.control) await stopPid(this.control.pid);
    await this.agents?.stop();
    await this.connection?.close();
    await this.kube?.stop();
    await this.server?.stop();
    closeSync(this.log);
  }
}
