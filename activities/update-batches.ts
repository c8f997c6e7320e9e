// A control worker's requests to one workflow (a node's, a pool's) reach it as batches: one batch
// update in flight per workflow, the requests that arrive meanwhile wait here and go in the next
// one. The server admits at most 10 in-flight updates per workflow (`history.maxInFlightUpdates`)
// and refuses the rest, so one update per request turned a burst into refusals and retries with
// back-off; a batch also costs the workflow's history one update's events, not one per request.
import { setTimeout as sleep } from 'node:timers/promises';

/** What one request's answer in a batch means: its value, send it again (and why), or its failure. */
export type Settled<R> = { value: R } | { again: true; why?: string } | { error: Error };

/** A request the workflow asked to send again, whose caller would rather not wait for that. */
export class SendAgain extends Error {
  override name = 'SendAgain';
  constructor(readonly why: string | undefined) {
    super(`sent again later: ${why ?? 'the workflow asked'}`);
  }
}

interface Waiting<Op, R> {
  op: Op;
  /** False: a "send again" answer rejects it (SendAgain) instead of keeping it for the next batch. */
  sendAgain: boolean;
  resolve(value: R): void;
  reject(err: unknown): void;
}

/** Keeps a batch's payload far below Temporal's 2 MB limit. */
const MAX_BATCH = 100;
/** Backoff for requests the workflow asked to send again (it was about to continue-as-new). */
const RESEND_MS = { first: 100, max: 2000 };

export class UpdateBatches<Op extends { id: string }, Outcome extends { id: string }, R> {
  /** key → requests waiting for the batch in flight to finish; present while one is. */
  private readonly queues = new Map<string, Array<Waiting<Op, R>>>();

  /**
   * `send`: one batch to the workflow of `key`, an outcome per request; `settle`: what a
   * request's outcome (undefined: none came back) means.
   */
  constructor(
    private readonly send: (key: string, ops: Op[]) => Promise<Outcome[]>,
    private readonly settle: (key: string, op: Op, outcome: Outcome | undefined) => Settled<R>,
  ) {}

  /** `sendAgain` false: the caller is told (SendAgain) when the workflow asks for the request again. */
  submit(key: string, op: Op, sendAgain = true): Promise<R> {
    return new Promise((resolve, reject) => {
      const waiting = { op, sendAgain, resolve, reject };
      const queue = this.queues.get(key);
      if (queue) {
        queue.push(waiting);
        return;
      }
      this.queues.set(key, [waiting]);
      void this.drain(key);
    });
  }

  private async drain(key: string): Promise<void> {
    let resends = 0;
    for (;;) {
      const queue = this.queues.get(key) ?? [];
      if (queue.length === 0) {
        this.queues.delete(key);
        return;
      }
      const batch = queue.splice(0, MAX_BATCH);
      const again = await this.flush(key, batch);
      if (again.length === 0) {
        resends = 0;
        continue;
      }
      queue.unshift(...again);
      await sleep(Math.min(RESEND_MS.max, RESEND_MS.first * 2 ** resends++));
    }
  }

  /** Sends one batch and settles its requests; returns those to send again. */
  private async flush(key: string, batch: Array<Waiting<Op, R>>): Promise<Array<Waiting<Op, R>>> {
    let outcomes: Outcome[];
    try {
      outcomes = await this.send(
        key,
        batch.map((w) => w.op),
      );
    } catch (err) {
      for (const waiting of batch) waiting.reject(err);
      return [];
    }
    const byId = new Map(outcomes.map((o) => [o.id, o]));
    const again: Array<Waiting<Op, R>> = [];
    for (const waiting of batch) {
      const settled = this.settle(key, waiting.op, byId.get(waiting.op.id));
      if ('value' in settled) waiting.resolve(settled.value);
      else if ('again' in settled && waiting.sendAgain) again.push(waiting);
      else if ('again' in settled) waiting.reject(new SendAgain(settled.why));
      else waiting.reject(settled.error);
    }
    return again;
  }
}
