// Watch events for one object are handled in arrival order; events for different objects run
// side by side, at most `limit` at once. One serial loop could not keep up with a cluster's
// churn: each pod event may cost a quorum read, a visibility query and a signal.

export class ObjectQueue {
  private readonly tails = new Map<string, Promise<void>>();
  private readonly waiting: (() => void)[] = [];
  private running = 0;

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new Error(`limit must be a positive integer, got ${limit}`);
  }

  /** Runs `task` after every task pushed before it for `key`; a failure goes to `onError`. */
  push(key: string, task: () => Promise<unknown>, onError: (err: unknown) => void): void {
    const previous = this.tails.get(key);
    const mine = (async () => {
      await previous;
      await this.slot();
      try {
        await task();
      } catch (err) {
        reportSafely(onError, err);
      } finally {
        this.release();
      }
    })();
    this.tails.set(key, mine);
    // The object's last task clears its entry: the map holds only objects with work queued.
    void mine.finally(() => {
      if (this.tails.get(key) === mine) this.tails.delete(key);
    });
  }

  /** Objects with work queued or running. */
  get pending(): number {
    return this.tails.size;
  }

  /** Resolves once nothing is queued or running. */
  async drained(): Promise<void> {
    while (this.tails.size > 0) await Promise.all(this.tails.values());
  }

  private slot(): Promise<void> {
    if (this.running < this.limit) {
      this.running += 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next)
      next(); // the slot passes straight on
    else this.running -= 1;
  }
}

/** A reporter that throws must not stop the object's later events (nor go unhandled). */
function reportSafely(onError: (err: unknown) => void, err: unknown): void {
  try {
    onError(err);
  } catch {
    // nothing left to tell
  }
}
