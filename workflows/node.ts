// node/<nodeName>: the single writer of a node's addresses. Every allocation and release of the
// node goes through this workflow's updates, so nothing can hand out one address twice.
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
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
  type AddressGrant,
  type AllocationTable,
} from '../domain/allocation';
import { acquireBlockUpdateId } from '../domain/ids';
import { FailureType } from '../domain/lease';
import { NodeName, NodeUID } from '../domain/search-attributes';
import { historyTooLong } from './continue-as-new';
import { toApplicationFailure } from './failures';
import { releaseSignal } from './lease-messages';
import {
  allocateUpdate,
  loadAllocationUpdate,
  nodeDeletedSignal,
  nodeObservedSignal,
  nodeStateQuery,
  releaseUpdate,
  type AllocateRequest,
  type NodeInput,
  type NodeState,
  type ReleaseAddressRequest,
} from './node-messages';
import { ResultMemory } from './remembered-results';
import { Serial } from './serial';

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
  await condition(allHandlersFinished);
  return continueAsNew<typeof nodeWorkflow>({ ...input, state: node.carriedState() });
}

/** Released lease runs remembered: far more than a node has leases in flight at once. */
const RUNS_KEPT = 2000;

const runKey = (owner: string, run: string) => `${owner}@${run}`;

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
  /** Allocations one at a time, in arrival order: two must never race for one free address. */
  private readonly serial = new Serial();

  constructor(private readonly input: NodeInput) {
    this.state = input.state ?? initialState();
    this.memory = new ResultMemory(this.state.results);
    upsertSearchAttributes([{ key: NodeName, value: input.nodeName }]);
    this.describe();
  }

  registerHandlers(): void {
    setHandler(
      allocateUpdate,
      (request) => this.memory.once(() => this.serial.run(() => this.allocate(request))),
      {
        validator: (request) => {
          if (!request.owner || !request.pool?.name) throw new Error('allocate needs owner and pool');
        },
      },
    );
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

  /** allocate: one address per pool family for the owner lease, from this incarnation's blocks. */
  private async allocate(request: AllocateRequest): Promise<AddressGrant[]> {
    if (request.run && this.state.releasedRuns?.includes(runKey(request.owner, request.run))) {
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
    for (;;) {
      expireCooldowns(table, Date.now());
      const outcome = allocate(table, request.pool, {
        owner: request.owner,
        podUid: request.podUid,
        incarnation: this.state.incarnation,
      });
      if (outcome.kind === 'granted') return outcome.allocations.map((a) => grantOf(request.pool, a));
      await this.acquireBlock(table, request, outcome.family);
    }
  }

  /** The node ran out of addresses of a family: one more block from the pool workflow. */
  private async acquireBlock(table: AllocationTable, request: AllocateRequest, family: 4 | 6) {
    const { incarnation } = this.state;
    const seq = ++this.state.blockRequests;
    const cidr = await acquireBlock({
      pool: request.pool,
      node: this.input.nodeName,
      incarnation,
      family,
      updateId: acquireBlockUpdateId(this.input.nodeName, incarnation, family, seq),
    }).catch((err: unknown) => {
      throw toApplicationFailure(err, FailureType.exhausted);
    });
    if (table.blocks.some((b) => b.cidr === cidr)) {
      throw ApplicationFailure.nonRetryable(
        `pool ${request.pool.name} handed block ${cidr} twice`,
        FailureType.conflict,
      );
    }
    table.blocks.push({ cidr, family, incarnation });
  }

  /** release: the owner's addresses go back, each cooling down before it can be handed out again. */
  private release(request: ReleaseAddressRequest): AddressGrant[] {
    if (request.run)
      this.state.releasedRuns = [...(this.state.releasedRuns ?? []).slice(-RUNS_KEPT + 1), request.run];
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
