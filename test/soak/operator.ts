// An operator's actions, from the pinned Temporal CLI as an operator types them (docs/operating.md: "A lease
// that does not move"): terminate and reset (to the first or the last workflow task) of a lease, a
// node and the pool workflow; signals with no input and with wrong input; cancellation requests
// to a node and the pool; and a change of the pool's config across a restart of the control
// worker: an unsafe one refused at start-up while the old config keeps running, a safe one (a CIDR
// added) applied. Each action the product must refuse or ignore is checked here (`operator`
// violations); what it must recover from is the checker's (nothing lost, no duplicate).
import { leaseWorkflowId, nodeWorkflowId, poolWorkflowId } from '../../domain/ids';
import type { PoolSpec } from '../../domain/config';
import { unlessGone } from '../../temporal/workflow-gone';
import { nodeStateQuery } from '../../workflows/node-messages';
import { poolStateQuery } from '../../workflows/pool-messages';
import type { Finding } from './checker';
import { pause, until, type FaultContext } from './fault-context';
import { failedTasks } from './histories';
import { SOAK_POOL, type SoakNode } from './stack';

/** How long soft findings about a lease an operator closed may last: a reconcile run brings it back. */
const RECOVERY_GRACE_MS = 90_000;

export class Operator {
  private cidrs = 0;

  constructor(private readonly ctx: FaultContext) {}

  /** Terminates a living pod's lease, the node's workflow and the pool's, in a random order. */
  async terminate(node: SoakNode): Promise<string> {
    const done: string[] = [];
    for (const id of this.targets(node)) {
      this.closing(id);
      const result = await this.cli([
        'workflow',
        'terminate',
        '--workflow-id',
        id,
        '--reason',
        'soak operator',
      ]);
      done.push(`${id} ${result}`);
      await pause(this.ctx.random.int(0, 2000));
    }
    return done.join('; ');
  }

  /** Resets the same three, each to its first or its last workflow task. */
  async reset(node: SoakNode): Promise<string> {
    const done: string[] = [];
    for (const id of this.targets(node)) {
      const type = this.ctx.random.pick(['FirstWorkflowTask', 'LastWorkflowTask'] as const);
      this.closing(id);
      const args = ['workflow', 'reset', '--workflow-id', id, '--type', type, '--reason', 'soak operator'];
      done.push(`${id} ${type} ${await this.cli(args)}`);
      await pause(this.ctx.random.int(0, 2000));
    }
    return done.join('; ');
  }

  /**
   * Signals an operator could send from the UI's form by mistake: `nodeObserved` with no input and
   * with a made-up uid, `nodeDeleted` naming the live Node, a lease's `release` with `{}`. None
   * may change anything or fail a workflow task.
   */
  async signals(node: SoakNode): Promise<string> {
    const since = Date.now();
    const nodeId = nodeWorkflowId(node.name);
    const liveUid = await this.liveNodeUid(node);
    const before = await this.incarnation(node);
    const signals: Array<[string, string, string | undefined]> = [
      [nodeId, 'nodeObserved', undefined],
      [nodeId, 'nodeObserved', '{"uid":"anything"}'],
      [nodeId, 'nodeDeleted', liveUid ? JSON.stringify({ uid: liveUid }) : undefined],
    ];
    const lease = this.livingLease();
    if (lease) signals.push([lease.id, 'release', '{}']);
    for (const [id, name, input] of signals) {
      const args = ['workflow', 'signal', '--workflow-id', id, '--name', name];
      await this.cli(input === undefined ? args : [...args, '--input', input]);
    }
    await pause(5000);
    const after = await this.incarnation(node);
    if (before && after !== before)
      this.violation(
        nodeId,
        `the node's incarnation went from ${before} to ${after || '(none)'} after bad signals`,
      );
    for (const id of await this.started([...new Set(signals.map(([target]) => target))]))
      await this.noBrokenTask(id, since);
    if (lease) await this.stillHolding(lease.id, lease.podUid);
    return `${signals.length} signals (${signals.map(([id, name]) => `${name} to ${id}`).join(', ')})`;
  }

  /**
   * Cancellation requests to the node's workflow and the pool's: those running must run on. One
   * closed already (an earlier fault's Terminate, no hand-out since) is not asked: the CI's soak,
   * seed 1261502627, judged a pool terminated 8 s before as if the cancel had ended it.
   */
  async cancel(node: SoakNode): Promise<string> {
    const since = Date.now();
    const ids = await this.running([nodeWorkflowId(node.name), poolWorkflowId(SOAK_POOL)]);
    for (const id of ids) await this.cli(['workflow', 'cancel', '--workflow-id', id]);
    await pause(3000);
    for (const id of ids) {
      const { status } = await this.ctx.stack.client.workflow.getHandle(id).describe();
      if (status.name !== 'RUNNING')
        this.violation(id, `${id} is ${status.name} after a cancellation request`);
      await this.noBrokenTask(id, since);
    }
    return ids.join(', ');
  }

  /**
   * An unsafe change is rolled out beside the running control worker: the new one must refuse it
   * at start-up, naming the field, and the pool keep its spec. Then a safe one (a CIDR added)
   * replaces the running worker, and the pool must have it.
   */
  async poolConfigChange(): Promise<string> {
    const { stack, random } = this.ctx;
    const [field, change] = random.pick<[string, Partial<PoolSpec>]>([
      ['blockSize', { blockSize: { ipv4: 25, ipv6: 120 } }],
      ['gateway', { gateway: 'none' }],
      ['cidrs', { cidrs: stack.poolCidrs.slice(1) }],
    ]);
    const before = await this.poolSpec();
    const rollout = stack.startControlWith(stack.controlConfig(change), 'control-unsafe.json');
    let ended = false; // exited, its output read to the end
    void rollout.exited.then(() => (ended = true));
    const exited = await until(() => ended, 90_000);
    if (!exited) {
      process.kill(rollout.pid, 'SIGKILL');
      this.violation(
        poolWorkflowId(SOAK_POOL),
        `a control worker with an unsafe ${field} change kept running`,
      );
    } else if (rollout.child.exitCode === 0 || !rollout.output().includes(field))
      this.violation(
        poolWorkflowId(SOAK_POOL),
        `an unsafe ${field} change exited ${rollout.child.exitCode} without naming ${field}: ${rollout.output().slice(-500)}`,
      );
    await rollout.exited;
    const kept = await this.poolSpec();
    if (JSON.stringify(kept) !== JSON.stringify(before))
      this.violation(poolWorkflowId(SOAK_POOL), `the pool's spec changed to ${JSON.stringify(kept)}`);
    const added = `198.19.${this.cidrs++}.0/24`;
    stack.poolCidrs = [...stack.poolCidrs, added];
    await stack.stopControl();
    await stack.startControl();
    const applied = await until(async () => (await this.poolSpec())?.cidrs.includes(added) ?? false, 90_000);
    if (!applied) this.violation(poolWorkflowId(SOAK_POOL), `the pool did not get the added CIDR ${added}`);
    return `${field} refused${exited ? '' : ' (NOT: kept running)'}; ${added} ${applied ? 'applied' : 'NOT applied'}`;
  }

  /** A living pod's lease (if any), the node's workflow and the pool's, in a random order. */
  private targets(node: SoakNode): string[] {
    const lease = this.livingLease();
    const ids = [nodeWorkflowId(node.name), poolWorkflowId(SOAK_POOL), ...(lease ? [lease.id] : [])];
    return ids.sort(() => this.ctx.random.next() - 0.5);
  }

  private livingLease(): { id: string; podUid: string } | undefined {
    const told = [...this.ctx.workload.ledger.values()].filter((t) => !t.rerunning);
    if (told.length === 0) return undefined;
    const { podUid } = this.ctx.random.pick(told);
    return { id: leaseWorkflowId(podUid, 'eth0'), podUid };
  }

  /** The operator closes this workflow's run: the checker excuses it, and the lease's pod may wait. */
  private closing(id: string): void {
    this.ctx.checker.operatorCloses(id);
    const podUid = /^lease\/([^/]+)\//.exec(id)?.[1];
    if (podUid) {
      this.ctx.checker.grace(podUid, RECOVERY_GRACE_MS);
      this.ctx.checker.grace(id, RECOVERY_GRACE_MS);
    }
  }

  /**
   * Those of `ids` Temporal has a workflow for: a node's starts with its first allocation, so a
   * fault early in the soak may find none (its message was refused, and nothing is to be judged).
   */
  private async started(ids: string[]): Promise<string[]> {
    const client = this.ctx.stack.client.workflow;
    const found = await Promise.all(
      ids.map((id) => unlessGone(async () => Boolean(await client.getHandle(id).describe()), false)),
    );
    return ids.filter((_, i) => found[i]);
  }

  /** Those of `ids` whose latest run is running now. */
  private async running(ids: string[]): Promise<string[]> {
    const client = this.ctx.stack.client.workflow;
    const statuses = await Promise.all(
      ids.map((id) => unlessGone(async () => (await client.getHandle(id).describe()).status.name, 'NONE')),
    );
    return ids.filter((_, i) => statuses[i] === 'RUNNING');
  }

  /** Runs the CLI; its outcome in a word (a refusal, such as a run closed meanwhile, is not the product's). */
  private async cli(args: string[]): Promise<string> {
    const result = await this.ctx.stack.temporalCli(args);
    return result.exitCode === 0
      ? 'ok'
      : `refused (${(result.stderr || result.stdout).trim().slice(0, 200)})`;
  }

  /**
   * No workflow task of `id` failed by its own code since `since` (a handler that threw) and stayed
   * failed: one that failed is given 30 s for a later task to complete it (a transient failure).
   */
  private async noBrokenTask(id: string, since: number): Promise<void> {
    const stuck = async () =>
      failedTasks(await this.ctx.stack.client.workflow.getHandle(id).fetchHistory(), since - 1000).stuck;
    if (!(await until(async () => (await stuck()).length === 0, 30_000)))
      for (const task of await stuck())
        this.violation(id, `${id}: a workflow task failed after an operator's message (${task})`);
  }

  private async stillHolding(leaseId: string, podUid: string): Promise<void> {
    const state = await this.ctx.stack.client.workflow
      .getHandle(leaseId)
      .query<{ phase: string }>('state')
      .catch(() => undefined);
    const living = this.ctx.workload.ledger.has(podUid);
    if (state && living && ['Releasing', 'Released'].includes(state.phase))
      this.violation(leaseId, `${leaseId} is ${state.phase} after a release signal with {}`);
  }

  private async liveNodeUid(node: SoakNode): Promise<string | undefined> {
    const read = await this.ctx.stack.kubeClients.core.readNode({ name: node.name }).catch(() => undefined);
    return read?.metadata?.uid;
  }

  private async incarnation(node: SoakNode): Promise<string | undefined> {
    const handle = this.ctx.stack.client.workflow.getHandle(nodeWorkflowId(node.name));
    return (await handle.query(nodeStateQuery).catch(() => undefined))?.incarnation;
  }

  private async poolSpec(): Promise<PoolSpec | undefined> {
    const handle = this.ctx.stack.client.workflow.getHandle(poolWorkflowId(SOAK_POOL));
    return (await handle.query(poolStateQuery).catch(() => undefined))?.spec;
  }

  private violation(workflowId: string, detail: string): void {
    const finding: Finding = {
      invariant: 'operator',
      subject: `${workflowId}@${Date.now()}`,
      detail,
      workflows: [workflowId],
    };
    this.ctx.checker.violation(finding);
  }
}
