// node/<nodeName>: the single writer of a node's addresses. Every allocation and release of the
// node goes through this workflow's batch update, so nothing can hand out one address twice.
// By concern: node/allocation.ts (allocate, release, blocks acquired ahead), node/incarnations.ts
// (observe, forget), node/compensation.ts (a gone incarnation's leases and blocks), node/batch.ts.
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { NodeName } from '../domain/search-attributes';
import {
  batchUpdate,
  loadAllocationUpdate,
  nodeDeletedSignal,
  nodeObservedSignal,
  nodeStateQuery,
  type NodeInput,
  type NodeState,
} from './node-messages';
import { Allocator } from './node/allocation';
import { applyBatch, validateBatch } from './node/batch';
import { Compensation } from './node/compensation';
import { Incarnations } from './node/incarnations';
import { NodeRun } from './node/run';
import { ResultMemory } from './remembered-results';

export async function nodeWorkflow(input: NodeInput): Promise<never> {
  const run = new NodeRun(input);
  const memory = new ResultMemory(run.state.results);
  upsertSearchAttributes([{ key: NodeName, value: input.nodeName }]);
  const incarnations = new Incarnations(run);
  incarnations.describe();
  const allocator = new Allocator(run, incarnations);
  const carried = (): NodeState => ({ ...run.state, results: memory.carry() });

  setHandler(batchUpdate, (operations) => applyBatch(allocator, memory, operations), {
    validator: validateBatch,
  });
  setHandler(loadAllocationUpdate, ({ pool, allocation }) => allocator.load(pool, allocation));
  setHandler(nodeObservedSignal, ({ uid }) => incarnations.observe(uid));
  setHandler(nodeDeletedSignal, ({ uid }) => incarnations.forget(uid));
  setHandler(nodeStateQuery, carried);

  await new Compensation(run, allocator, incarnations).compensateRetiredIncarnations();
  // Until no handler runs and no block is on its way: then the run can continue-as-new.
  await condition(() => allHandlersFinished() && allocator.idle());
  return continueAsNew<typeof nodeWorkflow>({ ...input, state: carried() });
}
