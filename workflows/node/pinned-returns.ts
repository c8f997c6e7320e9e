// A static address's pinned block (domain/static-addresses) goes back to the pool once the address
// is released and has cooled down, so that the address can follow its pod to another node. Only
// pinned blocks: a node keeps its pool blocks until its incarnation is gone (compensation).
import { CancellationScope, condition, patched, sleep, workflowInfo } from '@temporalio/workflow';
import { isPinnedBlock } from '../../domain/static-addresses';
import { expireCooldowns, type AllocationTable, type Block } from '../../domain/allocation';
import { contains, parseAddress, parsePrefix } from '../../domain/cidr';
import { returnBlocks } from './block-activities';
import type { NodeRun } from './run';

/** Marks runs that return a pinned block only from a verified table (the soak's reset run did not). */
const RETURN_FROM_VERIFIED_TABLES = 'pinned-returns-verified-table';

interface Unheld {
  pool: string;
  block: Block;
  /** When its address has cooled down (epoch ms); undefined: it has. */
  coolsAt: number | undefined;
}

export class PinnedReturns {
  private returning: Promise<void> | undefined;
  /** A return in flight: its blocks must not be handed to a pod meanwhile. */
  private sending: Promise<void> | undefined;

  constructor(
    private readonly run: NodeRun,
    /** The table can be trusted now (not a reset run's unverified one, no rebuild running). */
    private readonly verified: () => boolean = () => true,
  ) {}

  /** No return is being sent: the run may continue-as-new (a wait for a cooldown starts again). */
  idle(): boolean {
    return this.sending === undefined;
  }

  /** Until no return is in flight (a static allocation must not take a block on its way back). */
  async settled(): Promise<void> {
    while (this.sending) await this.sending;
  }

  /** After a release, and when a run starts: pinned blocks no lease holds go back once cooled. */
  schedule(): void {
    if (this.returning || this.unheld().length === 0) return;
    // Not cancellable, as the node is not (a Cancel from the UI is ignored with a note).
    this.returning = CancellationScope.nonCancellable(() => this.returnWhenCooled()).finally(() => {
      this.returning = undefined;
    });
  }

  private async returnWhenCooled(): Promise<void> {
    for (;;) {
      const unheld = this.unheld();
      if (unheld.length === 0 || this.run.historyFull()) return;
      const ready = unheld.filter((u) => u.coolsAt === undefined);
      if (ready.length === 0) {
        await sleep(Math.max(1, Math.min(...unheld.map((u) => u.coolsAt ?? 0)) - Date.now()));
        continue;
      }
      // An unverified table may lack an allocation its rebuild gives back to a live lease: a block
      // returned now could be handed to another node while that lease still holds its address.
      if (!this.verified() && patched(RETURN_FROM_VERIFIED_TABLES)) {
        await condition(this.verified);
        continue;
      }
      this.sending = this.send(ready);
      try {
        await this.sending;
      } finally {
        this.sending = undefined;
      }
    }
  }

  /** The pinned blocks no allocation holds, each with when its address cools down. */
  private unheld(): Unheld[] {
    const now = Date.now();
    return Object.entries(this.run.state.tables).flatMap(([pool, table]) => {
      const spec = this.run.state.pools[pool];
      if (!spec) return [];
      expireCooldowns(table, now);
      const held = new Set(Object.values(table.allocations).map((a) => a.block));
      return table.blocks
        .filter((b) => isPinnedBlock(spec, b.cidr) && !held.has(b.cidr))
        .map((block) => ({ pool, block, coolsAt: coolingUntil(table, block) }));
    });
  }

  /** One return per pool and incarnation; the blocks leave the table once the pool has them. */
  private async send(ready: Unheld[]): Promise<void> {
    const { state, nodeName } = this.run;
    for (const { pool, block } of ready) {
      // Taken again while the returns before it were on their way (the same pod back on this node).
      if (!this.unheld().some((u) => u.block.cidr === block.cidr && u.coolsAt === undefined)) continue;
      const seq = ++state.blockRequests;
      await returnBlocks({
        pool,
        node: nodeName,
        incarnation: block.incarnation,
        blocks: [block.cidr],
        updateId: `return-pinned/${nodeName}/${block.incarnation}/${block.cidr}/${seq}/${workflowInfo().runId}`,
        pinned: true,
      });
      const table = state.tables[pool];
      if (table) table.blocks = table.blocks.filter((b) => b.cidr !== block.cidr);
    }
  }
}

function coolingUntil(table: AllocationTable, block: Block): number | undefined {
  const prefix = parsePrefix(block.cidr);
  const cooling = Object.entries(table.cooldowns).find(([address]) => {
    const a = parseAddress(address);
    return contains(prefix, a.family, a.value);
  });
  return cooling?.[1];
}
