// A control worker's allocations and releases reach each node workflow as batches
// (activities/update-batches): one batch update in flight per node.
import type { NodeOperation, OperationFailure, OperationOutcome } from '../workflows/node-messages';
import type { AddressGrant } from '../domain/allocation';
import { FailureType } from '../domain/lease';
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

function settleOperation(
  node: string,
  op: NodeOperation,
  outcome: OperationOutcome | undefined,
): Settled<AddressGrant[]> {
  if (!outcome) return { error: new Error(`node ${node} did not answer ${op.id}`) };
  if ('grants' in outcome) return { value: outcome.grants };
  // The node was about to continue-as-new: the next run takes it.
  if (outcome.failure.type === FailureType.nodeContinuing) return { again: true };
  return { error: new OperationFailed(outcome.failure) };
}

export class NodeBatches extends UpdateBatches<NodeOperation, OperationOutcome, AddressGrant[]> {
  constructor(send: SendBatch) {
    super(send, settleOperation);
  }
}
