// pool/<poolName>: hands blocks of the pool's CIDRs to node incarnations and takes them back.
// Touched only when a node needs a block, so ADDs on different nodes never contend here; when
// many nodes need one at once (a cluster coming up), the control worker sends their requests as
// one batch update (`acquireBlocks`), each answered on its own.
import { ApplicationFailure, continueAsNew, setCurrentDetails, setHandler } from '@temporalio/workflow';
import { blocksOf, freeBlock } from '../domain/blocks';
import { FailureType } from '../domain/lease';
import { ResultMemory } from './remembered-results';
import { untilTimeToContinue } from './continue-as-new';
import {
  acquireBlocksUpdate,
  acquireBlockUpdate,
  poolStateQuery,
  returnBlocksUpdate,
  type AcquireBlockRequest,
  type BlockOutcome,
  type BlockRequest,
  type PoolInput,
  type PoolState,
} from './pool-messages';

const isBlockRequest = (r: BlockRequest): boolean =>
  typeof r?.id === 'string' &&
  typeof r.node === 'string' &&
  typeof r.incarnation === 'string' &&
  (r.family === 4 || r.family === 6) &&
  typeof r.spec?.name === 'string';

/** The batch's validator: anything but a list of hand-out requests is refused whole. */
function validateBlockRequests(requests: BlockRequest[]): void {
  if (!Array.isArray(requests) || !requests.every(isBlockRequest))
    throw new Error('acquireBlocks needs a list of {id, node, incarnation, family: 4|6, spec}');
}

export async function poolWorkflow(input: PoolInput): Promise<never> {
  const state: PoolState = input.state ?? { spec: input.spec, blocks: {}, results: [] };
  const memory = new ResultMemory(state.results);
  const details = () => setCurrentDetails(`${Object.keys(state.blocks).length} blocks handed out`);

  const handOut = (request: AcquireBlockRequest): string => {
    state.spec = request.spec;
    const block = freeBlock(state.blocks, state.spec, request.family);
    if (!block) {
      throw ApplicationFailure.nonRetryable(
        `pool ${state.spec.name} has no free IPv${request.family} block left`,
        FailureType.exhausted,
      );
    }
    state.blocks[block] = { node: request.node, incarnation: request.incarnation };
    details();
    return block;
  };

  /** One hand-out of a batch; a refusal is its answer, so the others get theirs. */
  const handOutOf = async (request: BlockRequest): Promise<BlockOutcome> => {
    try {
      return { id: request.id, block: await memory.once(() => handOut(request), request.id) };
    } catch (err) {
      if (!(err instanceof ApplicationFailure)) throw err;
      const failure = { message: err.message, type: err.type ?? FailureType.exhausted, nonRetryable: true };
      return { id: request.id, failure };
    }
  };

  setHandler(acquireBlockUpdate, (request) => memory.once(() => handOut(request)));
  setHandler(acquireBlocksUpdate, (requests) => Promise.all(requests.map(handOutOf)), {
    validator: validateBlockRequests,
  });

  setHandler(returnBlocksUpdate, (request) =>
    memory.once(() => {
      const held = blocksOf(state.blocks, request.node, request.incarnation);
      const returned = request.blocks ? held.filter((b) => request.blocks?.includes(b)) : held;
      for (const block of returned) delete state.blocks[block];
      details();
      return returned;
    }),
  );

  setHandler(poolStateQuery, () => ({ ...state, results: memory.carry() }));

  details();
  await untilTimeToContinue(input.historyLimit);
  return continueAsNew<typeof poolWorkflow>({ ...input, state: { ...state, results: memory.carry() } });
}
