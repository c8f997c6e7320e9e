// node/<nodeName>: the single writer of a node's addresses. Every allocation and release of the
// node goes through this workflow's updates, so nothing can hand out one address twice.
import {
  ApplicationFailure,
  continueAsNew,
  defineQuery,
  defineUpdate,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { ControlActivities } from '../activities/control';
import {
  allocate,
  emptyTable,
  expireCooldowns,
  grantOf,
  release,
  type AddressGrant,
  type AllocationTable,
} from '../domain/allocation';
import type { PoolSpec } from '../domain/config';
import { acquireBlockUpdateId } from '../domain/ids';
import { FailureType } from '../domain/lease';
import { NodeName } from '../domain/search-attributes';
import { toApplicationFailure } from './failures';
import { ResultMemory, type RememberedResults } from './remembered-results';
import { Serial } from './serial';
import { untilTimeToContinue } from './continue-as-new';

export interface NodeState {
  /** Current incarnation (Kubernetes node UID); '' until one is observed. */
  incarnation: string;
  pools: Record<string, PoolSpec>;
  /** pool name → allocation table. */
  tables: Record<string, AllocationTable>;
  /** Blocks requested so far per pool/family, for deterministic acquire update ids. */
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
}

export interface ReleaseAddressRequest {
  owner: string;
  pool: string;
  cooldownMs: number;
}

export const allocateUpdate = defineUpdate<AddressGrant[], [AllocateRequest]>('allocate');
export const releaseUpdate = defineUpdate<AddressGrant[], [ReleaseAddressRequest]>('release');
export const nodeStateQuery = defineQuery<NodeState>('state');

const { acquireBlock } = proxyActivities<ControlActivities>({
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

  setHandler(nodeStateQuery, () => ({ ...state, results: memory.carry() }));

  setCurrentDetails(`Serving addresses of node ${input.nodeName}`);
  await untilTimeToContinue(input.historyLimit);
  return continueAsNew<typeof nodeWorkflow>({ ...input, state: { ...state, results: memory.carry() } });
}
