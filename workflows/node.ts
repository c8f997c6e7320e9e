// node/<nodeName>: the single writer of a node's addresses. Every allocation and release of the
// node goes through this workflow's batch update, so nothing can hand out one address twice.
// By concern: node/allocation.ts (allocate, release, blocks acquired ahead), node/incarnations.ts
// (observe, forget), node/compensation.ts (a gone incarnation's leases follow their pods),
// node/pinned-returns.ts (a static address's block goes back once released),
// node/rebuild.ts (a table never lost), node/batch.ts.
import {
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { LoadAllocationSchema, RebuildRequestSchema } from '../domain/node-requests';
import { NodeName } from '../domain/search-attributes';
import {
  batchUpdate,
  loadAllocationUpdate,
  nodeDeletedSignal,
  nodeObservedSignal,
  nodeStateQuery,
  rebuildUpdate,
  type NodeInput,
  type NodeState,
} from './node-messages';
import { Allocator } from './node/allocation';
import { applyBatch, validateBatch } from './node/batch';
import { Compensation } from './node/compensation';
import { Incarnations } from './node/incarnations';
import { PinnedReturns } from './node/pinned-returns';
import { TableRebuild } from './node/rebuild';
import { NodeRun } from './node/run';
import { noteIgnored } from './notes';
import { brokenAt, failpoint } from './failpoints';
import { ResultMemory } from './remembered-results';
import { validated } from './validated';

/** A cancellation request would end the only record of the node's addresses: it is ignored. */
const CANCELLATION_IGNORED =
  'a cancellation request is ignored: the node workflow holds the only record of its addresses. ' +
  'Terminate it to have it rebuilt from the leases (docs/operating.md: "A lease that does not move")';

export async function nodeWorkflow(input: NodeInput): Promise<never> {
  const run = new NodeRun(input);
  const memory = new ResultMemory(run.state.results);
  upsertSearchAttributes([{ key: NodeName, value: input.nodeName }]);
  const incarnations = new Incarnations(run);
  incarnations.describe();
  const rebuild = new TableRebuild(run, memory, incarnations);
  const pins = new PinnedReturns(run, () => rebuild.trusted() && !rebuild.busy());
  const allocator = new Allocator(run, incarnations, pins);
  const carried = (): NodeState => ({
    ...run.state,
    results: memory.carry(),
    trustCarried: rebuild.trusted(),
  });
  const shielded = <T>(work: () => Promise<T>) => CancellationScope.nonCancellable(work);
  const rebuilt = shielded(() => rebuild.beginIfFresh());

  setHandler(
    batchUpdate,
    (operations) => shielded(() => applyBatch(allocator, memory, rebuild, operations)),
    {
      validator: validateBatch,
    },
  );
  setHandler(loadAllocationUpdate, ({ pool, allocation }) => allocator.load(pool, allocation), {
    validator: validated(LoadAllocationSchema, 'loadAllocation'),
  });
  setHandler(
    rebuildUpdate,
    ({ forRun }) => shielded(() => rebuild.rebuild(forRun, 'the control worker found it unverified')),
    { validator: validated(RebuildRequestSchema, 'rebuild') },
  );
  setHandler(
    nodeObservedSignal,
    (event: unknown) => {
      brokenAt('node-observed');
      return shielded(() => incarnations.observeSignalled(event));
    },
    {
      description: 'Sent by netlease when a Node of this name has a new UID (verified by a quorum read).',
    },
  );
  setHandler(nodeDeletedSignal, (event: unknown) => shielded(() => incarnations.forgetSignalled(event)), {
    description: 'Sent by netlease when the Node with this UID is gone (verified by a quorum read).',
  });
  setHandler(nodeStateQuery, carried);
  CancellationScope.current().cancelRequested.catch(() => noteIgnored(CANCELLATION_IGNORED));

  return shielded(async () => {
    await rebuilt;
    pins.schedule(); // static addresses released in an earlier run
    await new Compensation(run, allocator, incarnations).compensateRetiredIncarnations();
    // Until no handler runs and no block is on its way: then the run can continue-as-new.
    await condition(() => allHandlersFinished() && allocator.idle() && pins.idle() && !rebuild.busy());
    failpoint('continue-as-new');
    return continueAsNew<typeof nodeWorkflow>({ ...input, restartedAfter: undefined, state: carried() });
  });
}
