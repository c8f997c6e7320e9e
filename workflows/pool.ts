// pool/<poolName>: hands blocks of the pool's CIDRs to node incarnations and takes them back.
// Touched only when a node needs a block, so ADDs on different nodes never contend here.
import { ApplicationFailure, continueAsNew, setCurrentDetails, setHandler } from '@temporalio/workflow';
import { blocksOf, freeBlock } from '../domain/blocks';
import { FailureType } from '../domain/lease';
import { ResultMemory } from './remembered-results';
import { untilTimeToContinue } from './continue-as-new';
import {
  acquireBlockUpdate,
  poolStateQuery,
  returnBlocksUpdate,
  type PoolInput,
  type PoolState,
} from './pool-messages';

export async function poolWorkflow(input: PoolInput): Promise<never> {
  const state: PoolState = input.state ?? { spec: input.spec, blocks: {}, results: [] };
  const memory = new ResultMemory(state.results);

  setHandler(acquireBlockUpdate, (request) =>
    memory.once(() => {
      state.spec = request.spec;
      const block = freeBlock(state.blocks, state.spec, request.family);
      if (!block) {
        throw ApplicationFailure.nonRetryable(
          `pool ${state.spec.name} has no free IPv${request.family} block left`,
          FailureType.exhausted,
        );
      }
      state.blocks[block] = { node: request.node, incarnation: request.incarnation };
      setCurrentDetails(`${Object.keys(state.blocks).length} blocks handed out`);
      return block;
    }),
  );

  setHandler(returnBlocksUpdate, (request) =>
    memory.once(() => {
      const held = blocksOf(state.blocks, request.node, request.incarnation);
      const returned = request.blocks ? held.filter((b) => request.blocks?.includes(b)) : held;
      for (const block of returned) delete state.blocks[block];
      setCurrentDetails(`${Object.keys(state.blocks).length} blocks handed out`);
      return returned;
    }),
  );

  setHandler(poolStateQuery, () => ({ ...state, results: memory.carry() }));

  setCurrentDetails(`${Object.keys(state.blocks).length} blocks handed out`);
  await untilTimeToContinue(input.historyLimit);
  return continueAsNew<typeof poolWorkflow>({ ...input, state: { ...state, results: memory.carry() } });
}
