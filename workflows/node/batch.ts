// The batch update: allocations and releases of many leases, each answered on its own, once per
// operation id (across continue-as-new).
import { ApplicationFailure } from '@temporalio/workflow';
import { FailureType } from '../../domain/lease';
import type { NodeOperation, OperationOutcome } from '../node-messages';
import type { ResultMemory } from '../remembered-results';
import type { Allocator } from './allocation';

const isOperation = (op: NodeOperation): boolean =>
  typeof op?.id === 'string' &&
  (op.kind === 'allocate' || op.kind === 'release') &&
  typeof op.request === 'object';

const invalidOperation = (op: NodeOperation): boolean =>
  !op.request?.owner || (op.kind === 'allocate' ? !op.request.pool?.name : !op.request.pool);

/** The update's validator: a batch that is no list of operations is refused whole. */
export function validateBatch(operations: NodeOperation[]): void {
  if (!Array.isArray(operations) || !operations.every(isOperation))
    throw new Error('batch needs a list of {kind: allocate|release, id, request}');
}

export const applyBatch = (
  allocator: Allocator,
  memory: ResultMemory,
  operations: NodeOperation[],
): Promise<OperationOutcome[]> => Promise.all(operations.map((op) => applyOperation(allocator, memory, op)));

/** One operation of a batch; a refusal is its answer, so the others in the batch get theirs. */
async function applyOperation(
  allocator: Allocator,
  memory: ResultMemory,
  op: NodeOperation,
): Promise<OperationOutcome> {
  try {
    if (invalidOperation(op)) throw ApplicationFailure.nonRetryable(`${op.kind} needs owner and pool`);
    const grants = await memory.once(
      () => (op.kind === 'allocate' ? allocator.allocate(op.request) : allocator.release(op.request)),
      op.id,
    );
    return { id: op.id, grants };
  } catch (err) {
    if (!(err instanceof ApplicationFailure)) throw err;
    const type = err.type ?? FailureType.invalidConfig;
    return { id: op.id, failure: { message: err.message, type, nonRetryable: err.nonRetryable === true } };
  }
}
