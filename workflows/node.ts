// node/<nodeName>: the single writer of a node's addresses. Every allocation and release of the
// node goes through this workflow's updates, so nothing can hand out one address twice.
import {
  ApplicationFailure,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  defineUpdate,
  getExternalWorkflowHandle,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  allHandlersFinished,
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
  type Allocation,
  type AllocationTable,
} from '../domain/allocation';
import type { PoolSpec } from '../domain/config';
import { acquireBlockUpdateId } from '../domain/ids';
import { FailureType } from '../domain/lease';
import { NodeName, NodeUID } from '../domain/search-attributes';
import { releaseSignal } from './lease-messages';
import { historyTooLong } from './continue-as-new';
import { toApplicationFailure } from './failures';
import { ResultMemory, type RememberedResults } from './remembered-results';
import { Serial } from './serial';

export interface NodeState {
  /** Current incarnation (Kubernetes node UID); '' until one is observed or after deletion. */
  incarnation: string;
  /** Past incarnations whose leases are being released (compensation), uid → why. */
  retired: Record<string, string>;
  /** Incarnations that are over: never current again, whatever a stale event says. */
  past: string[];
  pools: Record<string, PoolSpec>;
  /** pool name → allocation table. */
  tables: Record<string, AllocationTable>;
  /** Blocks requested so far (all pools and families): makes acquire update ids deterministic. */
  blockRequests: number;
  results: RememberedResults;
}

export interface NodeInput {
  nodeName: string;
  historyLimit: number;
  state?: NodeState;
}

export interface AllocateRequest {
  owner: string;
  podUid: string;
  pool: PoolSpec;
  /** Node UID read (quorum) when the request was made; '' without a cluster. */
  incarnation?: string;
}

export interface ReleaseAddressRequest {
  owner: string;
  pool: string;
  cooldownMs: number;
}

export interface IncarnationEvent {
  uid: string;
}

export const allocateUpdate = defineUpdate<AddressGrant[], [AllocateRequest]>('allocate');
/** Imports an allocation made elsewhere; refuses an address another owner holds (seed 000). */
export const loadAllocationUpdate = defineUpdate<void, [{ pool: PoolSpec; allocation: Allocation }]>(
  'loadAllocation',
);
/** The node with this name has this UID now (watch event or reconciler). */
export const nodeObservedSignal = defineSignal<[IncarnationEvent]>('nodeObserved');
/** The node incarnation with this UID is gone (verified by a quorum read). */
export const nodeDeletedSignal = defineSignal<[IncarnationEvent]>('nodeDeleted');
export const releaseUpdate = defineUpdate<AddressGrant[], [ReleaseAddressRequest]>('release');
export const nodeStateQuery = defineQuery<NodeState>('state');

const { acquireBlock, returnBlocks } = proxyActivities<ControlActivities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '200 ms',
    maximumInterval: '5 seconds',
    nonRetryableErrorTypes: [FailureType.exhausted],
  },
});

export async function nodeWorkflow(input: NodeInput): Promise<never> {
  const state: NodeState = input.state ?? {
    incarnation: '',
    retired: {},
    past: [],
    pools: {},
    tables: {},
    blockRequests: 0,
    results: [],
  };
  const memory = new ResultMemory(state.results);
  const serial = new Serial();
  upsertSearchAttributes([{ key: NodeName, value: input.nodeName }]);

  const tableOf = (pool: string): AllocationTable => (state.tables[pool] ??= emptyTable());

  const allocateFor = async (request: AllocateRequest): Promise<AddressGrant[]> => {
    if (request.incarnation) observe(request.incarnation);
    if (request.incarnation && request.incarnation !== state.incarnation) {
      throw ApplicationFailure.nonRetryable(
        `node ${input.nodeName} incarnation ${request.incarnation} is gone`,
        FailureType.invalidConfig,
      );
    }
    state.pools[request.pool.name] = request.pool;
    const table = tableOf(request.pool.name);
    for (;;) {
      expireCooldowns(table, Date.now());
      const outcome = allocate(table, request.pool, {
        owner: request.owner,
        podUid: request.podUid,
        incarnation: state.incarnation,
      });
      if (outcome.kind === 'granted') return outcome.allocations.map((a) => grantOf(request.pool, a));
      const seq = ++state.blockRequests;
      const cidr = await acquireBlock({
        pool: request.pool,
        node: input.nodeName,
        incarnation: state.incarnation,
        family: outcome.family,
        updateId: acquireBlockUpdateId(input.nodeName, state.incarnation, outcome.family, seq),
      }).catch((err: unknown) => {
        throw toApplicationFailure(err, FailureType.exhausted);
      });
      if (table.blocks.some((b) => b.cidr === cidr)) {
        throw ApplicationFailure.nonRetryable(
          `pool ${request.pool.name} handed block ${cidr} twice`,
          FailureType.conflict,
        );
      }
      table.blocks.push({ cidr, family: outcome.family, incarnation: state.incarnation });
    }
  };

  setHandler(allocateUpdate, (request) => memory.once(() => serial.run(() => allocateFor(request))), {
    validator: (request) => {
      if (!request.owner || !request.pool?.name) throw new Error('allocate needs owner and pool');
    },
  });

  setHandler(releaseUpdate, (request) =>
    memory.once(() => {
      const table = tableOf(request.pool);
      const pool = state.pools[request.pool];
      const released = release(table, request.owner, Date.now(), request.cooldownMs);
      return pool ? released.map((a) => grantOf(pool, a)) : [];
    }),
  );

  setHandler(loadAllocationUpdate, ({ pool, allocation }) => {
    state.pools[pool.name] = pool;
    try {
      load(tableOf(pool.name), allocation);
    } catch (err) {
      if (err instanceof AllocationConflict)
        throw ApplicationFailure.nonRetryable(err.message, FailureType.conflict);
      throw err;
    }
  });

  const allTables = () => Object.entries(state.tables);
  const describeNode = () => {
    const retired = Object.keys(state.retired);
    setCurrentDetails(
      `node ${input.nodeName} incarnation ${state.incarnation || '(not observed)'}` +
        (retired.length ? `; compensating ${retired.join(', ')}` : ''),
    );
  };
  const retire = (uid: string, why: string) => {
    if (uid === '' || state.retired[uid] || state.past.includes(uid)) return;
    state.retired[uid] = why;
    state.past = [...state.past.slice(-20), uid];
    log.info('node incarnation retired', { node: input.nodeName, uid, why });
  };
  const adopt = (uid: string) => {
    // Addresses handed out before the first observation belong to the incarnation seen first.
    for (const [, table] of allTables()) {
      for (const block of table.blocks) if (block.incarnation === '') block.incarnation = uid;
      for (const allocation of Object.values(table.allocations))
        if (allocation.incarnation === '') allocation.incarnation = uid;
    }
  };

  function observe(uid: string): void {
    if (!uid || uid === state.incarnation || state.past.includes(uid)) return;
    if (state.incarnation !== '') retire(state.incarnation, `node replaced by incarnation ${uid}`);
    state.incarnation = uid;
    adopt(uid);
    upsertSearchAttributes([{ key: NodeUID, value: uid }]);
    describeNode();
  }
  setHandler(nodeObservedSignal, ({ uid }) => observe(uid));
  setHandler(nodeDeletedSignal, ({ uid }) => {
    if (uid !== state.incarnation) return retire(uid, 'node deleted');
    retire(uid, 'node deleted');
    state.incarnation = '';
    upsertSearchAttributes([{ key: NodeUID, value: null }]);
    describeNode();
  });

  setHandler(nodeStateQuery, () => ({ ...state, results: memory.carry() }));

  const ownersOf = (uid: string) => [
    ...new Set(
      allTables().flatMap(([, t]) =>
        Object.values(t.allocations)
          .filter((a) => a.incarnation === uid)
          .map((a) => a.owner),
      ),
    ),
  ];

  /** Releases every lease of a gone incarnation, waits out cooldowns, gives its blocks back. */
  const compensate = async (uid: string) => {
    const reason = `node ${input.nodeName} incarnation ${uid}: ${state.retired[uid]}`;
    for (;;) {
      for (const owner of ownersOf(uid)) {
        await getExternalWorkflowHandle(owner)
          .signal(releaseSignal, { reason, nodeGone: true })
          .catch(() => {
            // The lease workflow is closed: nobody live holds the address any more.
            for (const [name] of allTables()) release(tableOf(name), owner, Date.now(), 0);
          });
      }
      if (await condition(() => ownersOf(uid).length === 0, '5 minutes')) break;
    }
    for (const [poolName, table] of allTables()) {
      const blocks = table.blocks.filter((b) => b.incarnation === uid);
      if (!blocks.length) continue;
      const cooling = Object.values(table.cooldowns);
      const wait = Math.max(0, ...cooling) - Date.now();
      if (wait > 0) await sleep(wait);
      expireCooldowns(table, Date.now());
      await returnBlocks({
        pool: poolName,
        node: input.nodeName,
        incarnation: uid,
        blocks: blocks.map((b) => b.cidr),
        updateId: `return/${input.nodeName}/${uid}/${poolName}`,
      });
      table.blocks = table.blocks.filter((b) => b.incarnation !== uid);
    }
    delete state.retired[uid];
    describeNode();
  };

  describeNode();
  const nextRetired = () => Object.keys(state.retired)[0];
  while (!historyTooLong(input.historyLimit)) {
    await condition(() => nextRetired() !== undefined || historyTooLong(input.historyLimit));
    const uid = nextRetired();
    if (uid !== undefined) await compensate(uid);
  }
  await condition(allHandlersFinished);
  return continueAsNew<typeof nodeWorkflow>({ ...input, state: { ...state, results: memory.carry() } });
}
