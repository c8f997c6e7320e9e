// Faults at the pause points (kernel/failpoint): a process is started again to stop at one step,
// held there for a while once a step reaches it, then killed there or let go on (and started again
// without the pause). In the agent: an offer's answer on disk before its interface is made
// (`offer-written`), a revocation decided before it is on disk (`offer-revoked`). In the control
// worker: compensation's verdict on the pods read before it is acted on (`pods-judged`), and a
// node or pool workflow task that continues-as-new before the server has it (`continue-as-new`).
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { leaseWorkflowId } from '../../domain/ids';
import { offerFileOf } from '../../worker/agent/offers';
import { pause, until, type FaultContext } from './fault-context';
import type { NodeFaults } from './node-faults';
import { pauseEnv, type SoakNode } from './stack';

/** How a held pause ends. */
type Ending = 'killed' | 'went on';

/** The process being paused: started with the pause, and started again without it. */
interface Paused {
  start(env: Record<string, string>): Promise<void>;
  kill(): Promise<void>;
  /** SIGTERM: it finishes what it does and stops. */
  stop(): Promise<void>;
}

const gatesIn = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir) : []);

export class PausePoints {
  private serial = 0;

  constructor(
    private readonly ctx: FaultContext,
    private readonly nodes: NodeFaults,
  ) {}

  async offerWritten(node: SoakNode): Promise<string> {
    const reached = await this.held(this.agent(node), 'offer-written', 45_000, async () => undefined);
    return `${node.name}: ${reached}`;
  }

  /** A pod bound to the node and deleted before its ADD: its offer is revoked. */
  async offerRevoked(node: SoakNode): Promise<string> {
    const reached = await this.held(this.agent(node), 'offer-revoked', 45_000, () =>
      this.podDeletedBeforeAdd(node),
    );
    return `${node.name}: ${reached}`;
  }

  /** The node's Node registered again with its pods: its compensation judges them. */
  async compensation(node: SoakNode): Promise<string> {
    const { ledger } = this.ctx.workload;
    // Compensation judges the pods of the leases the gone incarnation held: some must be there.
    await until(() => [...ledger.values()].some((t) => t.node === node.name), 30_000);
    let registered = '';
    const reached = await this.held(this.control(), 'pods-judged', 60_000, async () => {
      registered = await this.nodes.reregister(node);
    });
    return `${registered}: ${reached}`;
  }

  async continueAsNew(): Promise<string> {
    return this.held(this.control(), 'continue-as-new', 120_000, async () => undefined);
  }

  /**
   * Starts the process paused at `step`, runs `trigger`, waits up to `withinMs` for a step to
   * reach the point, holds it, ends it, and starts the process again without the pause.
   */
  private async held(
    paused: Paused,
    step: string,
    withinMs: number,
    trigger: () => Promise<void>,
  ): Promise<string> {
    const dir = join(this.ctx.stack.pauseDir, `${step}-${++this.serial}`);
    mkdirSync(dir, { recursive: true });
    await paused.kill();
    await paused.start(pauseEnv(step, dir));
    await trigger();
    const reached = await until(() => gatesIn(dir).length > 0, withinMs);
    const holdMs = this.ctx.random.int(1000, 8000);
    if (reached) await pause(holdMs);
    const ending: Ending = this.ctx.random.chance(0.5) ? 'killed' : 'went on';
    if (ending === 'killed' || !reached) await paused.kill();
    else await this.letGo(paused, dir);
    await paused.start({});
    rmSync(dir, { recursive: true, force: true });
    return reached
      ? `${step} held ${holdMs} ms, then ${ending}`
      : `${step} not reached within ${withinMs} ms`;
  }

  /** Every pause goes on (its gate removed, also of pauses that come meanwhile) until the process stopped. */
  private async letGo(paused: Paused, dir: string): Promise<void> {
    let stopping = true;
    const opener = (async () => {
      while (stopping) {
        for (const gate of gatesIn(dir)) rmSync(join(dir, gate), { force: true });
        await pause(50);
      }
    })();
    await pause(this.ctx.random.int(500, 3000));
    await paused.stop();
    stopping = false;
    await opener;
  }

  private agent(node: SoakNode): Paused {
    const { stack } = this.ctx;
    return {
      start: (env) => stack.startAgent(node, env),
      kill: () => stack.killAgent(node),
      stop: () => stack.stopAgent(node),
    };
  }

  private control(): Paused {
    const { stack } = this.ctx;
    return {
      start: (env) => stack.startControl(env),
      kill: () => stack.killControl(),
      stop: () => stack.stopControl(),
    };
  }

  /** A pod bound to the node, its offer written, then deleted before any ADD. */
  private async podDeletedBeforeAdd(node: SoakNode): Promise<void> {
    const { pods } = this.ctx.workload;
    const name = `revoked-${++this.serial}`;
    const uid = await pods.create(name, node.name, false);
    const offer = join(node.dir, 'offers', offerFileOf(leaseWorkflowId(uid, 'eth0')));
    await until(() => existsSync(offer), 20_000);
    await pods.remove(name, uid, 0);
    this.ctx.workload.removed(uid);
  }
}
