// compensation: a gone incarnation's leases are released (node-local steps skipped), their
// cooldowns waited out, and its blocks given back to their pools.
import { condition, getExternalWorkflowHandle, sleep } from '@temporalio/workflow';
import { expireCooldowns, release, type AllocationTable } from '../../domain/allocation';
import { releaseSignal } from '../lease-messages';
import { returnBlocks } from './block-activities';
import type { Allocator } from './allocation';
import type { Incarnations } from './incarnations';
import type { NodeRun } from './run';

export class Compensation {
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

  /**
   * compensate: releases every lease of a gone incarnation (node-local steps skipped), waits
   * out the cooldowns, gives its blocks back.
   */
  private async compensate(uid: string): Promise<void> {
    if (!(await this.releaseLeasesOf(uid))) return; // history full: the next run goes on
    // A block still on its way to this incarnation must land before its blocks go back.
    await condition(() => !this.allocator.acquiringFor(uid));
    for (const [poolName, table] of Object.entries(this.run.state.tables)) {
      await this.returnBlocksOf(uid, poolName, table);
    }
    delete this.run.state.retired[uid];
    this.incarnations.describe();
  }

  /** Whether every lease of the incarnation let go of its addresses (false: history is full). */
  private async releaseLeasesOf(uid: string): Promise<boolean> {
    const { nodeName, state } = this.run;
    const reason = `node ${nodeName} incarnation ${uid}: ${state.retired[uid]}`;
    for (;;) {
      for (const owner of this.ownersOf(uid)) {
        await getExternalWorkflowHandle(owner)
          .signal(releaseSignal, { reason, nodeGone: true })
          .catch(() => {
            // The lease workflow is closed: nobody live holds the address any more.
            for (const name of Object.keys(state.tables))
              release(this.run.tableOf(name), owner, Date.now(), 0);
          });
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
    await returnBlocks({
      pool: poolName,
      node: this.run.nodeName,
      incarnation: uid,
      blocks: blocks.map((b) => b.cidr),
      updateId: `return/${this.run.nodeName}/${uid}/${poolName}`,
    });
    table.blocks = table.blocks.filter((b) => b.incarnation !== uid);
  }

  private ownersOf(uid: string): string[] {
    const owners = Object.values(this.run.state.tables).flatMap((t) =>
      Object.values(t.allocations)
        .filter((a) => a.incarnation === uid)
        .map((a) => a.owner),
    );
    return [...new Set(owners)];
  }
}
