// The batch update: allocations and releases of many leases, each answered on its own, once per
// operation id (across continue-as-new).
import { ApplicationFailure, workflowInfo } from '@temporalio/workflow';
import { FailureType } from '../../domain/lease';
import { NodeBatchSchema } from '../../domain/node-requests';
import type { NodeOperation, OperationOutcome } from '../node-messages';
import type { ResultMemory } from '../remembered-results';
import { validated } from '../validated';
import type { Allocator } from './allocation';
import type { TableRebuild } from './rebuild';

/** The update's validator: anything but a list of well-formed operations is refused whole. */
export const validateBatch = validated(NodeBatchSchema, 'batch');

export const applyBatch = (
  allocator: Allocator,
  memory: ResultMemory,
  rebuild: TableRebuild,
  operations: NodeOperation[],
): Promise<OperationOutcome[]> =>
  Promise.all(operations.map((op) => applyOperation(allocator, memory, rebuild, op)));

const refusal = (op: NodeOperation, type: string, message: string, run?: string): OperationOutcome => ({
  id: op.id,
  failure: { message, type, nonRetryable: false, ...(run ? { run } : {}) },
});

/** One operation of a batch; a refusal is its answer, so the others in the batch get theirs. */
async function applyOperation(
  allocator: Allocator,
  memory: ResultMemory,
  rebuild: TableRebuild,
  op: NodeOperation,
): Promise<OperationOutcome> {
  if (rebuild.busy()) return refusal(op, FailureType.tableRebuilding, 'the node is rebuilding its table');
  try {
    const grants = await memory.once(
      () => (op.kind === 'allocate' ? allocator.allocate(op.request) : allocator.release(op.request)),
      op.id,
    );
    // Done either way (replay stays the same); only the answer says the table is not vouched for.
    if (!rebuild.trusted()) {
      const { runId } = workflowInfo();
      return refusal(op, FailureType.tableUnverified, 'the node table is not verified (reset)', runId);
    }
    return { id: op.id, grants };
  } catch (err) {
    if (!(err instanceof ApplicationFailure)) throw err;
    const type = err.type ?? FailureType.invalidConfig;
    return { id: op.id, failure: { message: err.message, type, nonRetryable: err.nonRetryable === true } };
  }
}
