// Keys, not events: the pattern of controller-runtime's workqueue. Work is keyed by object, and an
// object's waiting work collapses into one entry holding its latest state (`merge`). At most
// `concurrency` keys are in hand at once, a key is never in hand twice at a time, and a key that
// changes while in hand is handled again after. Memory is bounded by the number of objects, not of
// events: with the handler stuck (Temporal down), a pod that changes 10,000 times holds one entry.

export interface ObjectQueueOptions<T> {
  /** Keys handled at once (different objects). */
  concurrency: number;
  /** Handles one key's latest state; a key waits for its previous handling to end. */
  handle: (key: string, state: T) => Promise<unknown>;
  /** A failed handling. It is not retried here: the object's next state, or the reconciler, is. */
  onError: (err: unknown, key: string) => void;
  /** The one state a key keeps when another comes while one waits; default: the newer. */
  merge?: (waiting: T, next: T) => T;
}

export class ObjectQueue<T> {
  /** Keys with a state waiting to be handled. */
  private readonly waiting = new Map<string, T>();
  /** Waiting keys not in hand, in the order they became ready (a Set: a key is there once). */
  private readonly ready = new Set<string>();
  private readonly inHand = new Set<string>();
  private idle: (() => void)[] = [];

  constructor(private readonly options: ObjectQueueOptions<T>) {
    const { concurrency } = options;
    if (!Number.isInteger(concurrency) || concurrency < 1)
      throw new Error(`concurrency must be a positive integer, got ${concurrency}`);
  }

  /** The key's state is now `state` (merged with one still waiting); handled when its turn comes. */
  add(key: string, state: T): void {
    const { merge } = this.options;
    const earlier = this.waiting.get(key);
    this.waiting.set(key, merge && this.waiting.has(key) ? merge(earlier as T, state) : state);
    if (!this.inHand.has(key)) this.ready.add(key);
    this.startReady();
  }

  /** Objects with a state waiting or in hand: at most one entry each, however many events came. */
  get size(): number {
    let size = this.waiting.size;
    for (const key of this.inHand) if (!this.waiting.has(key)) size++;
    return size;
  }

  /** Forgets every waiting state (a stopped watch); handlings in hand run to their end. */
  clear(): void {
    this.waiting.clear();
    this.ready.clear();
    this.settle();
  }

  /** Resolves once nothing waits and nothing is in hand. */
  drained(): Promise<void> {
    if (this.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private startReady(): void {
    for (const key of this.ready) {
      if (this.inHand.size >= this.options.concurrency) return;
      this.ready.delete(key);
      const state = this.waiting.get(key) as T; // ready keys wait
      this.waiting.delete(key);
      this.inHand.add(key);
      void this.run(key, state);
    }
  }

  private async run(key: string, state: T): Promise<void> {
    try {
      await this.options.handle(key, state);
    } catch (err) {
      reportSafely(this.options.onError, err, key);
    }
    this.inHand.delete(key);
    if (this.waiting.has(key)) this.ready.add(key); // changed while in hand: handled again
    this.startReady();
    this.settle();
  }

  private settle(): void {
    if (this.size > 0) return;
    const idle = this.idle;
    this.idle = [];
    for (const resolve of idle) resolve();
  }
}

/** A reporter that throws must not stop the queue (nor go unhandled). */
function reportSafely(onError: (err: unknown, key: string) => void, err: unknown, key: string): void {
  try {
    onError(err, key);
  } catch {
    // nothing left to tell
  }
}
