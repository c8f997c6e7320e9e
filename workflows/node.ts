// node/<nodeName>: the single writer of a node's addresses. Every allocation and release of the
// node goes through this workflow's updates, so nothing can hand out one address twice. An
// allocation is answered in the workflow task that delivers it (no await between finding a free
// address and taking it); only one that needs a new block waits, and the node acquires its next
// block ahead of need, so a burst does not keep updates in flight.
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { ControlActivities } from '../activities/control';
import {
  AllocationConflict,
  allocate,
  emptyTable,
  expireCooldowns,
  grantOf,
  load,
  release,
  runningLow,
  type AddressGrant,
  type Allocation,
  type AllocationOutcome,
  type AllocationTable,
} from '../domain/allocation';
import type { Family } from '../domain/cidr';
import type { PoolSpec } from '../domain/config';
import { acquireBlockUpdateId } from '../domain/ids';
import { FailureType } from '../domain/lease';
import { NodeName, NodeUID } from '../domain/search-attributes';
import { historyTooLong } from './continue-as-new';
import { toApplicationFailure } from './failures';
import { releaseSignal } from './lease-messages';
import {
  allocateUpdate,
  batchUpdate,
  loadAllocationUpdate,
  nodeDeletedSignal,
  nodeObservedSignal,
  nodeStateQuery,
  releaseUpdate,
  type AllocateRequest,
  type NodeInput,
  type NodeOperation,
  type NodeState,
  type OperationOutcome,
  type ReleaseAddressRequest,
} from './node-messages';
import { ResultMemory } from './remembered-results';

const { acquireBlock, returnBlocks } = proxyActivities<ControlActivities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '200 ms',
    maximumInterval: '5 seconds',
    nonRetryableErrorTypes: [FailureType.exhausted],
  },
});

export async function nodeWorkflow(input: NodeInput): Promise<never> {
  const node = new NodeAddresses(input);
  node.registerHandlers();
  await node.compensateRetiredIncarnations();
  await node.settled();
  return continueAsNew<typeof nodeWorkflow>({ ...input, state: node.carriedState() });
}

/** Released lease runs remembered: far more than a node has leases in flight at once. */
const RUNS_KEPT = 2000;

const runKey = (owner: string, run: string) => `${owner}@${run}`;

/** Marks histories in which the node acquires blocks ahead of need (older ones never did). */
const ACQUIRE_AHEAD = 'acquire-blocks-ahead';

/** A block being acquired: one at a time, as when every allocation waited its turn. */
interface Acquisition {
  pool: string;
  family: Family;
  incarnation: string;
  done: Promise<void>;
}

const isOperation = (op: NodeOperation): boolean =>
  typeof op?.id === 'string' &&
  (op.kind === 'allocate' || op.kind === 'release') &&
  typeof op.request === 'object';

const invalidOperation = (op: NodeOperation): boolean =>
  !op.request?.owner || (op.kind === 'allocate' ? !op.request.pool?.name : !op.request.pool);

const initialState = (): NodeState => ({
  incarnation: '',
  retired: {},
  past: [],
  pools: {},
  tables: {},
  blockRequests: 0,
  releasedRuns: [],
  results: [],
});

class NodeAddresses {
  private readonly state: NodeState;
  private readonly memory: ResultMemory;
  private acquisition: Acquisition | undefined;

  constructor(private readonly input: NodeInput) {
    this.state = input.state ?? initialState();
    this.memory = new ResultMemory(this.state.results);
    upsertSearchAttributes([{ key: NodeName, value: input.nodeName }]);
    this.describe();
  }

  registerHandlers(): void {
    setHandler(batchUpdate, (operations) => Promise.all(operations.map((op) => this.apply(op))), {
      validator: (operations) => {
        if (!Array.isArray(operations) || !operations.every(isOperation))
          throw new Error('batch needs a list of {kind: allocate|release, id, request}');
      },
    });
    setHandler(allocateUpdate, (request) => this.memory.once(() => this.allocate(request)), {
      validator: (request) => {
        if (!request.owner || !request.pool?.name) throw new Error('allocate needs owner and pool');
      },
    });
    setHandler(releaseUpdate, (request) => this.memory.once(() => this.release(request)));
    setHandler(loadAllocationUpdate, ({ pool, allocation }) => {
      this.state.pools[pool.name] = pool;
      try {
        load(this.tableOf(pool.name), allocation);
      } catch (err) {
        if (err instanceof AllocationConflict)
          throw ApplicationFailure.nonRetryable(err.message, FailureType.conflict);
        throw err;
      }
    });
    setHandler(nodeObservedSignal, ({ uid }) => this.observe(uid));
    setHandler(nodeDeletedSignal, ({ uid }) => this.forget(uid));
    setHandler(nodeStateQuery, () => this.carriedState());
  }

  carriedState(): NodeState {
    return { ...this.state, results: this.memory.carry() };
  }

  /** Until no handler runs and no block is on its way: then the run can continue-as-new. */
  async settled(): Promise<void> {
    await condition(() => allHandlersFinished() && this.acquisition === undefined);
  }

  /** One operation of a batch; a refusal is its answer, so the others in the batch get theirs. */
  private async apply(op: NodeOperation): Promise<OperationOutcome> {
    try {
      if (invalidOperation(op)) throw ApplicationFailure.nonRetryable(`${op.kind} needs owner and pool`);
      const grants = await this.memory.once(
        () => (op.kind === 'allocate' ? this.allocate(op.request) : this.release(op.request)),
        op.id,
      );
      return { id: op.id, grants };
    } catch (err) {
      if (!(err instanceof ApplicationFailure)) throw err;
      const type = err.type ?? FailureType.invalidConfig;
      return { id: op.id, failure: { message: err.message, type, nonRetryable: err.nonRetryable === true } };
    }
  }

  /** allocate: one address per pool family for the owner lease, from this incarnation's blocks. */
  private async allocate(request: AllocateRequest): Promise<AddressGrant[]> {
    for (;;) {
      const outcome = this.allocateNow(request);
      if (outcome.kind === 'granted') return outcome.allocations.map((a) => grantOf(request.pool, a));
      await this.blockFor(request.pool, outcome.family);
    }
  }

  /** The allocation from the blocks the node holds now, without awaiting anything. */
  private allocateNow(request: AllocateRequest): AllocationOutcome {
    if (request.run && this.wasReleased(request.owner, request.run)) {
      // Released while its allocation was on the way (release cancels a producing lease).
      throw ApplicationFailure.nonRetryable(`lease ${request.owner} was released`, FailureType.released);
    }
    if (request.incarnation) this.observe(request.incarnation);
    if (request.incarnation && request.incarnation !== this.state.incarnation) {
      throw ApplicationFailure.nonRetryable(
        `node ${this.input.nodeName} incarnation ${request.incarnation} is gone`,
        FailureType.invalidConfig,
      );
    }
    this.state.pools[request.pool.name] = request.pool;
    const table = this.tableOf(request.pool.name);
    expireCooldowns(table, Date.now());
    const outcome = allocate(table, request.pool, {
      owner: request.owner,
      podUid: request.podUid,
      incarnation: this.state.incarnation,
    });
    if (outcome.kind === 'granted') this.acquireAheadIfLow(request.pool, table, outcome.allocations);
    return outcome;
  }

  private wasReleased(owner: string, run: string): boolean {
    // Runs carried from before the key named the owner are plain run ids.
    const released = this.state.releasedRuns ?? [];
    return released.includes(runKey(owner, run)) || released.includes(run);
  }

  /**
   * Waits for a block: the one on its way, else a new one. Once history is full no new wait
   * starts, so the handlers finish and the run continues-as-new; the caller sends it again.
   */
  private blockFor(pool: PoolSpec, family: Family): Promise<void> {
    const current = this.acquisition;
    if (current?.pool === pool.name && current.family === family) return current.done;
    if (current) return current.done.catch(() => undefined); // another family's: then try again
    if (this.historyFull()) {
      throw ApplicationFailure.retryable(
        `node ${this.input.nodeName} is continuing as new; send the request again`,
        FailureType.nodeContinuing,
      );
    }
    return this.startAcquisition(pool, family);
  }

  /** An allocation left its family short: its next block is acquired now, in the background. */
  private acquireAheadIfLow(pool: PoolSpec, table: AllocationTable, allocations: Allocation[]): void {
    if (this.acquisition || this.historyFull()) return;
    const low = allocations.find((a) => runningLow(table, a));
    if (!low || !patched(ACQUIRE_AHEAD)) return;
    this.startAcquisition(pool, low.family).catch((err: unknown) =>
      // Nobody waits for it: an allocation that needs the block will ask again and fail itself.
      log.warn('block acquired ahead of need failed', { node: this.input.nodeName, error: String(err) }),
    );
  }

  private startAcquisition(pool: PoolSpec, family: Family): Promise<void> {
    const { incarnation } = this.state;
    const done = this.acquireBlock(pool, family, incarnation).finally(() => {
      this.acquisition = undefined;
    });
    this.acquisition = { pool: pool.name, family, incarnation, done };
    return done;
  }

  /** One more block of a family from the pool workflow. */
  private async acquireBlock(pool: PoolSpec, family: Family, incarnation: string): Promise<void> {
    const seq = ++this.state.blockRequests;
    const cidr = await acquireBlock({
      pool,
      node: this.input.nodeName,
      incarnation,
      family,
      updateId: acquireBlockUpdateId(this.input.nodeName, incarnation, family, seq),
    }).catch((err: unknown) => {
      throw toApplicationFailure(err, FailureType.exhausted);
    });
    const table = this.tableOf(pool.name);
    if (table.blocks.some((b) => b.cidr === cidr)) {
      throw ApplicationFailure.nonRetryable(
        `pool ${pool.name} handed block ${cidr} twice`,
        FailureType.conflict,
      );
    }
    table.blocks.push({ cidr, family, incarnation });
  }

  /** release: the owner's addresses go back, each cooling down before it can be handed out again. */
  private release(request: ReleaseAddressRequest): AddressGrant[] {
    if (request.run) {
      const kept = (this.state.releasedRuns ?? []).slice(-RUNS_KEPT + 1);
      this.state.releasedRuns = [...kept, runKey(request.owner, request.run)];
    }
    const pool = this.state.pools[request.pool];
    const released = release(this.tableOf(request.pool), request.owner, Date.now(), request.cooldownMs);
    return pool ? released.map((a) => grantOf(pool, a)) : [];
  }

  /** A node UID seen by a quorum read: a new one retires the current incarnation. */
  private observe(uid: string): void {
    const { state } = this;
    if (!uid || uid === state.incarnation || state.past.includes(uid)) return;
    if (state.incarnation !== '') this.retire(state.incarnation, `node replaced by incarnation ${uid}`);
    state.incarnation = uid;
    this.adopt(uid);
    upsertSearchAttributes([{ key: NodeUID, value: uid }]);
    this.describe();
  }

  /** The incarnation with this UID is deleted. */
  private forget(uid: string): void {
    this.retire(uid, 'node deleted');
    if (uid !== this.state.incarnation) return;
    this.state.incarnation = '';
    upsertSearchAttributes([{ key: NodeUID, value: null }]);
    this.describe();
  }

  private retire(uid: string, why: string): void {
    const { state } = this;
    if (uid === '' || state.retired[uid] || state.past.includes(uid)) return;
    state.retired[uid] = why;
    state.past = [...state.past.slice(-20), uid];
    log.info('node incarnation retired', { node: this.input.nodeName, uid, why });
  }

  /** Addresses handed out before the first observation belong to the incarnation seen first. */
  private adopt(uid: string): void {
    for (const table of Object.values(this.state.tables)) {
      for (const block of table.blocks) if (block.incarnation === '') block.incarnation = uid;
      for (const allocation of Object.values(table.allocations))
        if (allocation.incarnation === '') allocation.incarnation = uid;
    }
  }

  /**
   * Runs compensation for each retired incarnation until history is long enough to continue. A
   * compensation still waiting for its leases then continues in the next run, from `retired`.
   */
  async compensateRetiredIncarnations(): Promise<void> {
    const nextRetired = () => Object.keys(this.state.retired)[0];
    while (!this.historyFull()) {
      await condition(() => nextRetired() !== undefined || this.historyFull());
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
    await condition(() => this.acquisition?.incarnation !== uid);
    for (const [poolName, table] of Object.entries(this.state.tables)) {
      await this.returnBlocksOf(uid, poolName, table);
    }
    delete this.state.retired[uid];
    this.describe();
  }

  /** Whether every lease of the incarnation let go of its addresses (false: history is full). */
  private async releaseLeasesOf(uid: string): Promise<boolean> {
    const reason = `node ${this.input.nodeName} incarnation ${uid}: ${this.state.retired[uid]}`;
    for (;;) {
      for (const owner of this.ownersOf(uid)) {
        await getExternalWorkflowHandle(owner)
          .signal(releaseSignal, { reason, nodeGone: true })
          .catch(() => {
            // The lease workflow is closed: nobody live holds the address any more.
            for (const name of Object.keys(this.state.tables))
              release(this.tableOf(name), owner, Date.now(), 0);
          });
      }
      const settled = () => this.ownersOf(uid).length === 0 || this.historyFull();
      if (await condition(settled, '5 minutes')) return this.ownersOf(uid).length === 0;
    }
  }

  private historyFull(): boolean {
    return historyTooLong(this.input.historyLimit);
  }

  private async returnBlocksOf(uid: string, poolName: string, table: AllocationTable): Promise<void> {
    const blocks = table.blocks.filter((b) => b.incarnation === uid);
    if (!blocks.length) return;
    const wait = Math.max(0, ...Object.values(table.cooldowns)) - Date.now();
    if (wait > 0) await sleep(wait);
    expireCooldowns(table, Date.now());
    await returnBlocks({
      pool: poolName,
      node: this.input.nodeName,
      incarnation: uid,
      blocks: blocks.map((b) => b.cidr),
      updateId: `return/${this.input.nodeName}/${uid}/${poolName}`,
    });
    table.blocks = table.blocks.filter((b) => b.incarnation !== uid);
  }

  private ownersOf(uid: string): string[] {
    const owners = Object.values(this.state.tables).flatMap((t) =>
      Object.values(t.allocations)
        .filter((a) => a.incarnation === uid)
        .map((a) => a.owner),
    );
    return [...new Set(owners)];
  }

  private tableOf(pool: string): AllocationTable {
    return (this.state.tables[pool] ??= emptyTable());
  }

  private describe(): void {
    const retired = Object.keys(this.state.retired);
    setCurrentDetails(
      `node ${this.input.nodeName} incarnation ${this.state.incarnation || '(not observed)'}` +
        (retired.length ? `; compensating ${retired.join(', ')}` : ''),
    );
  }
}
