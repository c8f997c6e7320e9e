// Allocation and release of a node's addresses. An allocation is answered in the workflow task
// that delivers it (no await between finding a free address and taking it); only one that needs
// a new block waits, and the node acquires its next block ahead of need, so a burst does not keep
// updates in flight.
import { ApplicationFailure, log, patched, workflowInfo } from '@temporalio/workflow';
import {
  AllocationConflict,
  allocate,
  expireCooldowns,
  grantOf,
  load,
  release,
  runningLow,
  type AddressGrant,
  type Allocation,
  type AllocationOutcome,
  type AllocationTable,
} from '../../domain/allocation';
import { overlappingBlock } from '../../domain/blocks';
import { parsePrefix, type Family } from '../../domain/cidr';
import type { PoolSpec } from '../../domain/config';
import { acquireBlockUpdateId } from '../../domain/ids';
import { fenceMessage } from '../../domain/sticky-addresses';
import { FailureType } from '../../domain/lease';
import { toApplicationFailure } from '../failures';
import type { AllocateRequest, ReleaseAddressRequest } from '../node-messages';
import { acquireBlock } from './block-activities';
import type { Incarnations } from './incarnations';
import type { PinnedReturns } from './pinned-returns';
import type { NodeRun } from './run';

/** Released lease runs remembered: far more than a node has leases in flight at once. */
const RUNS_KEPT = 2000;

const runKey = (owner: string, run: string) => `${owner}@${run}`;

/** Marks histories in which the node acquires blocks ahead of need (older ones never did). */
const ACQUIRE_AHEAD = 'acquire-blocks-ahead';

/**
 * Marks histories whose block requests carry the run: a run that lost its table (terminated, then
 * started again) must not be handed a block back on the pool's remembered answer to a request of
 * the same sequence number from an earlier run.
 */
const RUN_SCOPED_BLOCK_REQUESTS = 'run-scoped-block-requests';

/**
 * Marks runs in which a block the pool hands this node while the same block is on its way back
 * from a gone incarnation waits for that return to land (the soak: a replaced node's compensation
 * returned its blocks in the task that asked a block for the new incarnation; the pool handed one
 * of them back at once, and the node, still holding it, refused it as handed twice: ADDs got 101).
 */
const HANDED_BACK_WAITS_FOR_RETURN = 'handed-back-block-waits-for-return';

/** A block being acquired: one at a time, as when every allocation waited its turn. */
interface Acquisition {
  pool: string;
  family: Family;
  incarnation: string;
  /** A static address's pinned block (domain/static-addresses); undefined: the pool's next block. */
  pinned?: string;
  done: Promise<void>;
}

/** A static address's pinned block to ask the pool for, and the sticky reservation it is for. */
interface Pin {
  block: string;
  reservation?: string;
}

const pinOf = (block: string, request: AllocateRequest): Pin =>
  request.reservation ? { block, reservation: request.reservation } : { block };

/**
 * A static address the node cannot give now. A sticky one waits behind the fence: its earlier
 * pod's sandbox, which lets go only once its node's agent removed it or its node is gone.
 */
function heldFailure(request: AllocateRequest, message: string): ApplicationFailure {
  if (!request.reservation) return ApplicationFailure.nonRetryable(message, FailureType.staticAddressHeld);
  return ApplicationFailure.nonRetryable(
    fenceMessage(request.reservation, message),
    FailureType.stickyAddressFenced,
  );
}

export class Allocator {
  private acquisition: Acquisition | undefined;
  /** Per incarnation, the return of its blocks to the pools under way (node/compensation). */
  private readonly returns = new Map<string, Promise<unknown>>();

  constructor(
    private readonly run: NodeRun,
    private readonly incarnations: Incarnations,
    private readonly pins: PinnedReturns,
  ) {}

  /** No block is on its way: the run may continue-as-new. */
  idle(): boolean {
    return this.acquisition === undefined;
  }

  /** Whether a block is on its way to this incarnation (its blocks must not go back before it lands). */
  acquiringFor(incarnation: string): boolean {
    return this.acquisition?.incarnation === incarnation;
  }

  /** The blocks of a gone incarnation go back while `done` is pending. */
  returningBlocksOf(incarnation: string, done: Promise<unknown>): void {
    this.returns.set(incarnation, done);
    void done.finally(() => this.returns.delete(incarnation)).catch(() => undefined);
  }

  /** allocate: one address per pool family for the owner lease, from this incarnation's blocks. */
  async allocate(request: AllocateRequest): Promise<AddressGrant[]> {
    for (;;) {
      // A pinned block on its way back to the pool is no block to give a static address from.
      if (request.addresses?.length) await this.pins.settled();
      const outcome = this.allocateNow(request);
      if (outcome.kind === 'granted') return outcome.allocations.map((a) => grantOf(request.pool, a));
      if (outcome.kind === 'held') throw heldFailure(request, outcome.message);
      const pin = outcome.kind === 'needPinned' ? pinOf(outcome.block, request) : undefined;
      await this.blockFor(request.pool, outcome.family, pin);
    }
  }

  /** release: the owner's addresses go back, each cooling down before it can be handed out again. */
  release(request: ReleaseAddressRequest): AddressGrant[] {
    const { state } = this.run;
    if (request.run) {
      const kept = (state.releasedRuns ?? []).slice(-RUNS_KEPT + 1);
      state.releasedRuns = [...kept, runKey(request.owner, request.run)];
    }
    const pool = state.pools[request.pool];
    const released = release(this.run.tableOf(request.pool), request.owner, Date.now(), request.cooldownMs);
    this.pins.schedule();
    return pool ? released.map((a) => grantOf(pool, a)) : [];
  }

  /** An allocation made elsewhere; refused (nothing changes) when another owner holds the address. */
  load(pool: PoolSpec, allocation: Allocation): void {
    this.run.state.pools[pool.name] = pool;
    try {
      load(this.run.tableOf(pool.name), allocation);
    } catch (err) {
      if (err instanceof AllocationConflict)
        throw ApplicationFailure.nonRetryable(err.message, FailureType.conflict);
      throw err;
    }
  }

  /** The allocation from the blocks the node holds now, without awaiting anything. */
  private allocateNow(request: AllocateRequest): AllocationOutcome {
    const { state } = this.run;
    if (request.run && this.wasReleased(request.owner, request.run)) {
      // Released while its allocation was on the way (release cancels a producing lease).
      throw ApplicationFailure.nonRetryable(`lease ${request.owner} was released`, FailureType.released);
    }
    if (request.incarnation) this.incarnations.observe(request.incarnation);
    if (request.incarnation && request.incarnation !== state.incarnation) {
      // Read before the Node was replaced: the runtime's next ADD reads the new one.
      throw ApplicationFailure.nonRetryable(
        `node ${this.run.nodeName} incarnation ${request.incarnation} is gone (replaced by ${state.incarnation || 'none yet'})`,
        FailureType.incarnationGone,
      );
    }
    state.pools[request.pool.name] = request.pool;
    const table = this.run.tableOf(request.pool.name);
    expireCooldowns(table, Date.now());
    const owner = { owner: request.owner, podUid: request.podUid, incarnation: state.incarnation };
    let outcome: AllocationOutcome;
    try {
      outcome = allocate(table, request.pool, owner, request.addresses);
    } catch (err) {
      // A static address the pool cannot hand out (the ADD checks it first; so does the node).
      if (err instanceof AllocationConflict)
        throw ApplicationFailure.nonRetryable(err.message, FailureType.invalidConfig);
      throw err;
    }
    if (outcome.kind === 'granted') this.acquireAheadIfLow(request.pool, table, outcome.allocations);
    return outcome;
  }

  private wasReleased(owner: string, run: string): boolean {
    // Runs carried from before the key named the owner are plain run ids.
    const released = this.run.state.releasedRuns ?? [];
    return released.includes(runKey(owner, run)) || released.includes(run);
  }

  /**
   * Waits for a block: the one on its way, else a new one. Once history is full no new wait
   * starts, so the handlers finish and the run continues-as-new; the caller sends it again.
   */
  private blockFor(pool: PoolSpec, family: Family, pin?: Pin): Promise<void> {
    const current = this.acquisition;
    if (current?.pool === pool.name && current.family === family && current.pinned === pin?.block)
      return current.done;
    if (current) return current.done.catch(() => undefined); // another family's: then try again
    if (this.run.historyFull()) {
      throw ApplicationFailure.retryable(
        `node ${this.run.nodeName} is continuing as new; send the request again`,
        FailureType.nodeContinuing,
      );
    }
    return this.startAcquisition(pool, family, pin);
  }

  /** An allocation left its family short: its next block is acquired now, in the background. */
  private acquireAheadIfLow(pool: PoolSpec, table: AllocationTable, allocations: Allocation[]): void {
    if (this.acquisition || this.run.historyFull()) return;
    const low = allocations.find((a) => runningLow(table, pool, a));
    if (!low || !patched(ACQUIRE_AHEAD)) return;
    this.startAcquisition(pool, low.family).catch((err: unknown) =>
      // Nobody waits for it: an allocation that needs the block will ask again and fail itself.
      log.warn('block acquired ahead of need failed', { node: this.run.nodeName, error: String(err) }),
    );
  }

  private startAcquisition(pool: PoolSpec, family: Family, pin?: Pin): Promise<void> {
    const { incarnation } = this.run.state;
    const done = this.acquireBlock(pool, family, incarnation, pin).finally(() => {
      this.acquisition = undefined;
    });
    this.acquisition = { pool: pool.name, family, incarnation, done, ...(pin ? { pinned: pin.block } : {}) };
    return done;
  }

  /** One more block of a family from the pool workflow: its next free one, or a pinned one. */
  private async acquireBlock(pool: PoolSpec, family: Family, incarnation: string, pin?: Pin): Promise<void> {
    const seq = ++this.run.state.blockRequests;
    const run = patched(RUN_SCOPED_BLOCK_REQUESTS) ? workflowInfo().runId : undefined;
    const cidr = await acquireBlock({
      pool,
      node: this.run.nodeName,
      incarnation,
      family,
      updateId: acquireBlockUpdateId(this.run.nodeName, incarnation, family, seq, run),
      ...pin,
    }).catch((err: unknown) => {
      throw toApplicationFailure(err, FailureType.exhausted);
    });
    const table = this.run.tableOf(pool.name);
    for (;;) {
      const held = overlappingBlock(
        table.blocks.map((b) => b.cidr),
        parsePrefix(cidr),
      );
      if (held === undefined) break;
      const returning = this.returns.get(table.blocks.find((b) => b.cidr === held)?.incarnation ?? '');
      if (!returning || !patched(HANDED_BACK_WAITS_FOR_RETURN))
        throw ApplicationFailure.nonRetryable(
          `pool ${pool.name} handed block ${cidr} twice`,
          FailureType.conflict,
        );
      await returning.catch(() => undefined); // landed: the pool had it back before handing it out
    }
    table.blocks.push({ cidr, family, incarnation });
  }
}
