// A node's table is never lost (issue 25 item 2). A run that starts without a carried table (the
// previous run was terminated, failed, or this is the node's first) rebuilds it from the open
// leases of the node (each read by id and query) and the pools' blocks before it allocates; until
// then every operation is answered "rebuilding" and sent again. A reset run has a table, but an
// earlier one, and the updates reapplied after the reset point may have answered differently than
// they did the first time: its answers say "unverified" (the update's response only, so replay is
// unchanged) until the control worker has it rebuild (the `rebuild` update).
import { log, patched, workflowInfo } from '@temporalio/workflow';
import { rebuildNodeTables, type RebuildReport } from '../../domain/table-rebuild';
import type { ResultMemory } from '../remembered-results';
import { TableTrust } from '../table-trust';
import { nodeTableEvidence } from './block-activities';
import type { Incarnations } from './incarnations';
import type { NodeRun } from './run';

/**
 * Marks runs whose rebuild forgets the remembered release answers of owners it restored (the soak
 * that met it: a reset run released a sticky pod's address, the rebuild gave it back to the
 * still-open lease, and the lease's next release was answered "nothing" from memory).
 */
const FORGET_RESTORED_RELEASES = 'rebuild-forgets-restored-releases';

/** Marks runs that rebuild a table they did not carry (older runs started empty). */
const FRESH_RUN_REBUILD = 'node-table-rebuild';

export class TableRebuild {
  private running: Promise<RebuildReport | null> | undefined;
  private readonly trust: TableTrust;

  constructor(
    private readonly run: NodeRun,
    private readonly memory: ResultMemory,
    private readonly incarnations: Incarnations,
  ) {
    this.trust = TableTrust.carriedIn(run.input.state);
  }

  /** A rebuild is running: operations are answered "rebuilding" meanwhile. */
  busy(): boolean {
    return this.running !== undefined;
  }

  /** Whether this run's answers can be used (workflows/table-trust). */
  trusted(): boolean {
    return this.trust.trusted();
  }

  /**
   * The first step of a run without a carried table. Begun before the handlers are set: an update
   * that came with the start is handled as its handler is set, and must find the rebuild running.
   */
  beginIfFresh(): Promise<unknown> {
    if (this.run.input.state || !patched(FRESH_RUN_REBUILD)) return Promise.resolve();
    const why = this.run.input.restartedAfter
      ? `restarted after ${this.run.input.restartedAfter}`
      : 'the run started without a table';
    return this.rebuild(workflowInfo().runId, why);
  }

  /** Rebuilds once for `forRun` (the run id the caller saw); a rebuild in progress is joined. */
  rebuild(forRun: string, why: string): Promise<RebuildReport | null> {
    if (this.run.state.trustedRun === forRun) return Promise.resolve(null);
    this.running ??= this.gatherAndApply(forRun, why).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async gatherAndApply(forRun: string, why: string): Promise<RebuildReport> {
    const applied = this.trust.rebuilding();
    const { state, nodeName } = this.run;
    this.incarnations.describe(`rebuilding its table (${why})`);
    const owners = [...new Set(Object.values(state.tables).flatMap((t) => Object.values(t.allocations)))].map(
      (a) => a.owner,
    );
    const evidence = await nodeTableEvidence({
      nodeName,
      owners: [...new Set(owners)],
      pools: Object.keys(state.pools),
      forRun,
    });
    const report = rebuildNodeTables(state, evidence, Date.now(), evidence.cooldownMs);
    // An owner whose allocation was dropped must not get it back from a remembered answer.
    for (const owner of report.dropped) this.memory.forget(`allocate/${owner}/`);
    if (report.restored.length > 0 && patched(FORGET_RESTORED_RELEASES))
      for (const owner of report.restored) this.memory.forget(`release/${owner}/`);
    // The run the activity's recorded answer names (a repeated request for it is not rebuilt again).
    state.trustedRun = evidence.forRun;
    applied();
    const counts = {
      blocksAdded: report.blocksAdded.length,
      allocationsAdded: report.allocationsAdded.length,
      reassigned: report.reassigned.length,
      dropped: report.dropped.length,
      leases: evidence.leases.length,
      closedOwners: evidence.closed.length,
    };
    if (report.duplicates.length)
      log.error('node table rebuilt: addresses held twice', {
        node: nodeName,
        duplicates: report.duplicates,
      });
    log.info('node table rebuilt', { node: nodeName, why, ...counts });
    this.incarnations.describe();
    return report;
  }
}
