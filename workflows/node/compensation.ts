// compensation: a gone incarnation's leases follow their pods (issue 25 item 1). A Node object
// deleted and registered again under the same name (a new UID) is not a machine whose pods are
// gone: the kubelet that comes back re-runs every pod still bound to the name, with the same pod
// UID, and their ADDs must find the same lease and addresses. So each lease of the gone
// incarnation is judged by its pod (a quorum list of the pods bound to the node): a pod that is
// gone or terminal has its lease released; a pod that exists keeps its lease, whose allocations
// (and their blocks) the current incarnation adopts, and whose unspent offer is revoked. Without a
// current incarnation (the Node deleted, not back yet) the living wait, judged again from time to
// time. Blocks go back to the pool only when empty, after the cooldowns.
import { condition, getExternalWorkflowHandle, log, patched, sleep } from '@temporalio/workflow';
import { expireCooldowns, release, type AllocationTable } from '../../domain/allocation';
import { nodeReplacedSignal, releaseSignal } from '../lease-messages';
import { judgePods, moveBlocks, returnBlocks } from './block-activities';
import type { Allocator } from './allocation';
import type { Incarnations } from './incarnations';
import type { NodeRun } from './run';

/** Marks histories whose compensation asks about the pods first (older ones released every lease). */
const RELEASE_FOLLOWS_POD = 'release-follows-pod';

/** How long living pods of a deleted Node wait before they are judged again. */
const JUDGE_AGAIN = '30 seconds';

export class Compensation {
  /** Owners signalled to release in this run (once each is enough: the lease keeps the first). */
  private readonly released = new Set<string>();

  constructor(
    private readonly run: NodeRun,
    private readonly allocator: Allocator,
    private readonly incarnations: Incarnations,
  ) {}

  /**
   * Runs compensation for each retired incarnation until history is long enough to continue. A
   * compensation still waiting for its leases then continues in the next run, from `retired`.
   */
  async compensateRetiredIncarnations(): Promise<void> {
    const nextRetired = () => Object.keys(this.run.state.retired)[0];
    while (!this.run.historyFull()) {
      await condition(() => nextRetired() !== undefined || this.run.historyFull());
      const uid = nextRetired();
      if (uid !== undefined) await this.compensate(uid);
    }
  }

  private async compensate(uid: string): Promise<void> {
    const settled = patched(RELEASE_FOLLOWS_POD)
      ? await this.settleLeasesOf(uid)
      : await this.releaseLeasesOf(uid);
    if (!settled) return; // history full: the next run goes on
    // A block still on its way to this incarnation must land before its blocks go back.
    await condition(() => !this.allocator.acquiringFor(uid));
    for (const [poolName, table] of Object.entries(this.run.state.tables)) {
      await this.returnBlocksOf(uid, poolName, table);
    }
    delete this.run.state.retired[uid];
    this.incarnations.describe();
  }

  /**
   * Each lease of the incarnation follows its pod. Whether every one has settled (false: history is
   * full, the next run goes on).
   */
  private async settleLeasesOf(uid: string): Promise<boolean> {
    const { nodeName, state } = this.run;
    for (;;) {
      const owners = this.ownersOf(uid);
      if (owners.length === 0) return true;
      if (this.run.historyFull()) return false;
      const verdict = await judgePods({ nodeName, pods: owners });
      const reason = `node ${nodeName} incarnation ${uid} (${state.retired[uid]})`;
      for (const gone of verdict.gone) await this.releaseOwner(gone.owner, `${reason}: ${gone.reason}`);
      const current = state.incarnation;
      if (current !== '' && current !== uid) await this.adopt(uid, current, verdict.alive);
      const waiting = () => this.ownersOf(uid).length === 0 || this.run.historyFull();
      // Living pods of a deleted Node: judged again later, or adopted as soon as it comes back.
      const changed = () => state.incarnation !== current && state.incarnation !== '';
      await condition(() => waiting() || changed(), JUDGE_AGAIN);
    }
  }

  /** The lease's pod is gone: released (node-local steps skipped when no incarnation is current). */
  private async releaseOwner(owner: string, reason: string): Promise<void> {
    if (this.released.has(owner)) return;
    this.released.add(owner);
    const nodeGone = this.run.state.incarnation === '';
    await getExternalWorkflowHandle(owner)
      .signal(releaseSignal, { reason, nodeGone })
      .catch(() => this.releaseInTable(owner)); // its workflow is closed: nobody holds the address
  }

  private releaseInTable(owner: string): void {
    for (const name of Object.keys(this.run.state.tables))
      release(this.run.tableOf(name), owner, Date.now(), 0);
  }

  /**
   * The current incarnation adopts the allocations of living pods and the blocks that hold them
   * (the pool is told); each adopted lease is told, so it revokes an offer nobody took.
   */
  private async adopt(from: string, to: string, owners: string[]): Promise<void> {
    const adopted = new Set(owners);
    for (const [pool, table] of Object.entries(this.run.state.tables)) {
      const moved = new Set<string>();
      for (const allocation of Object.values(table.allocations)) {
        if (allocation.incarnation !== from || !adopted.has(allocation.owner)) continue;
        allocation.incarnation = to;
        moved.add(allocation.block);
      }
      for (const block of table.blocks)
        if (block.incarnation === from && moved.has(block.cidr)) block.incarnation = to;
      // Addresses left in a moved block (cooling, or of leases released meanwhile) move with it.
      for (const allocation of Object.values(table.allocations))
        if (allocation.incarnation === from && moved.has(allocation.block)) allocation.incarnation = to;
      if (moved.size === 0) continue;
      await moveBlocks({
        pool,
        node: this.run.nodeName,
        from,
        to,
        blocks: [...moved],
        updateId: `move/${this.run.nodeName}/${from}/${to}/${pool}/${[...moved].join(',')}`,
      });
    }
    for (const owner of adopted) {
      await getExternalWorkflowHandle(owner)
        .signal(nodeReplacedSignal, { uid: to })
        .catch(() => undefined); // closed meanwhile: nothing to revoke
    }
    if (adopted.size)
      log.info('node incarnation adopted living leases', {
        node: this.run.nodeName,
        from,
        to,
        leases: adopted.size,
      });
  }

  /** Before release-follows-pod: every lease of the incarnation released (kept for old histories). */
  private async releaseLeasesOf(uid: string): Promise<boolean> {
    const { nodeName, state } = this.run;
    const reason = `node ${nodeName} incarnation ${uid}: ${state.retired[uid]}`;
    for (;;) {
      for (const { owner } of this.ownersOf(uid)) {
        await getExternalWorkflowHandle(owner)
          .signal(releaseSignal, { reason, nodeGone: true })
          .catch(() => this.releaseInTable(owner));
      }
      const settled = () => this.ownersOf(uid).length === 0 || this.run.historyFull();
      if (await condition(settled, '5 minutes')) return this.ownersOf(uid).length === 0;
    }
  }

  private async returnBlocksOf(uid: string, poolName: string, table: AllocationTable): Promise<void> {
    const blocks = table.blocks.filter((b) => b.incarnation === uid);
    if (!blocks.length) return;
    const wait = Math.max(0, ...Object.values(table.cooldowns)) - Date.now();
    if (wait > 0) await sleep(wait);
    expireCooldowns(table, Date.now());
    const returned = returnBlocks({
      pool: poolName,
      node: this.run.nodeName,
      incarnation: uid,
      blocks: blocks.map((b) => b.cidr),
      updateId: `return/${this.run.nodeName}/${uid}/${poolName}`,
    }).then(() => {
      table.blocks = table.blocks.filter((b) => b.incarnation !== uid);
    });
    this.allocator.returningBlocksOf(uid, returned);
    await returned;
  }

  /** The leases holding addresses of the incarnation, with their pods. */
  private ownersOf(uid: string): Array<{ owner: string; podUid: string }> {
    const owners = new Map<string, string>();
    for (const table of Object.values(this.run.state.tables))
      for (const a of Object.values(table.allocations))
        if (a.incarnation === uid) owners.set(a.owner, a.podUid);
    return [...owners].map(([owner, podUid]) => ({ owner, podUid }));
  }
}
