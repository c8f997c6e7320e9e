// A control worker's allocations and releases reach each node workflow as batches: one batch
// update in flight per node, the requests that arrive meanwhile wait here and go in the next one.
// The server admits at most 10 in-flight updates per workflow (`history.maxInFlightUpdates`) and
// rejects the rest, so one update per lease turned a burst of ADDs into rejections and retries;
// a batch also costs the node's history one update's events, not one per lease.
import type { NodeOperation, OperationFailure, OperationOutcome } from '../workflows/node-messages';
import type { AddressGrant } from '../domain/allocation';
import { FailureType } from '../domain/lease';

/** Sends one batch to one node workflow; resolves with an outcome per operation. */
export type SendBatch = (node: string, operations: NodeOperation[]) => Promise<OperationOutcome[]>;

/** The node refused one operation of a batch; the failure keeps its type for the lease to decide. */
export class OperationFailed extends Error {
  override name = 'OperationFailed';
  constructor(readonly failure: OperationFailure) {
    super(failure.message);
  }
}

interface Waiting {
  op: NodeOperation;
  resolve(grants: AddressGrant[]): void;
  reject(err: unknown): void;
}

/** Keeps a batch's payload (each operation carries its pool) far below Temporal's 2 MB limit. */
const MAX_BATCH = 100;
/** Backoff for operations the node asked to send again (it was about to continue-as-new). */
const RESEND_MS = { first: 100, max: 2000 };

export class NodeBatches {
  /** node → operations waiting for the batch in flight to finish; present while one is. */
  private readonly queues = new Map<string, Waiting[]>();

  constructor(private readonly send: SendBatch) {}

  submit(node: string, op: NodeOperation): Promise<AddressGrant[]> {
    return new Promise((resolve, reject) => {
      const queue = this.queues.get(node);
      if (queue) {
        queue.push({ op, resolve, reject });
        return;
      }
      this.queues.set(node, [{ op, resolve, reject }]);
      void this.drain(node);
    });
  }

  private async drain(node: string): Promise<void> {
    let resends = 0;
    for (;;) {
      const queue = this.queues.get(node) ?? [];
      if (queue.length === 0) {
        this.queues.delete(node);
        return;
      }
      const batch = queue.splice(0, MAX_BATCH);
      const again = await this.flush(node, batch);
      if (again.length === 0) {
        resends = 0;
        continue;
      }
      queue.unshift(...again);
      await delay(Math.min(RESEND_MS.max, RESEND_MS.first * 2 ** resends++));
    }
  }

  /** Sends one batch and settles its operations; returns those the node asked to send again. */
  private async flush(node: string, batch: Waiting[]): Promise<Waiting[]> {
    let outcomes: OperationOutcome[];
    try {
      outcomes = await this.send(
        node,
        batch.map((w) => w.op),
      );
    } catch (err) {
      for (const waiting of batch) waiting.reject(err);
      return [];
    }
    const byId = new Map(outcomes.map((o) => [o.id, o]));
    const again: Waiting[] = [];
    for (const waiting of batch) {
      const outcome = byId.get(waiting.op.id);
      if (!outcome) waiting.reject(new Error(`node ${node} did not answer ${waiting.op.id}`));
      else if ('grants' in outcome) waiting.resolve(outcome.grants);
      else if (outcome.failure.type === FailureType.nodeContinuing) again.push(waiting);
      else waiting.reject(new OperationFailed(outcome.failure));
    }
    return again;
  }
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
