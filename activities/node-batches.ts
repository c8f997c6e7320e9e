// A control worker's allocations and releases reach each node workflow as batches
// (activities/update-batches): one batch update in flight per node.
import type { NodeOperation, OperationFailure, OperationOutcome } from '../workflows/node-messages';
import type { AddressGrant } from '../domain/allocation';
import { nodeWorkflowId } from '../domain/ids';
import { FailureType } from '../domain/lease';
import type { RebuildRequests } from './rebuild-requests';
import { UpdateBatches, type Settled } from './update-batches';

/** Sends one batch to one node workflow; resolves with an outcome per operation. */
export type SendBatch = (node: string, operations: NodeOperation[]) => Promise<OperationOutcome[]>;

/** The node refused one operation of a batch; the failure keeps its type for the lease to decide. */
export class OperationFailed extends Error {
  override name = 'OperationFailed';
  constructor(readonly failure: OperationFailure) {
    super(failure.message);
  }
}

/** Sent again: the node was about to continue-as-new, or is rebuilding its table. */
const SEND_AGAIN = new Set<string>([FailureType.nodeContinuing, FailureType.tableRebuilding]);

function settleOperation(
  rebuilds: RebuildRequests | undefined,
  node: string,
  op: NodeOperation,
  outcome: OperationOutcome | undefined,
): Settled<AddressGrant[]> {
  if (!outcome) return { error: new Error(`node ${node} did not answer ${op.id}`) };
  if ('grants' in outcome) return { value: outcome.grants };
  const { type, run } = outcome.failure;
  if (SEND_AGAIN.has(type)) return { again: true, why: type };
  // A reset run's answer is not used: it rebuilds its table first (workflows/node/rebuild).
  if (type === FailureType.tableUnverified && run && rebuilds) return rebuilds.ask(nodeWorkflowId(node), run);
  return { error: new OperationFailed(outcome.failure) };
}

export class NodeBatches extends UpdateBatches<NodeOperation, OperationOutcome, AddressGrant[]> {
  constructor(send: SendBatch, rebuilds?: RebuildRequests) {
    super(send, (node, op, outcome) => settleOperation(rebuilds, node, op, outcome));
  }
}
