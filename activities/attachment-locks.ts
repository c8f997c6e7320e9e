// One attachment's kernel work at a time. The lease's activation attempts (a retry starts while an
// attempt that timed out on the server still runs here), an offer's answer, its revocation and
// the deactivation all touch the same veth pair: they run one after another, in the order they
// came. A removal (deactivation, revocation) stops the activations that came before it: the
// attachment is going away, and an activation that went on after the removal would leave an
// interface whose addresses went back to the pool.

/** What a piece of work does to the attachment. */
export type AttachmentWork = 'activation' | 'removal';

/** Why an activation stopped: a removal of its attachment came after it. */
export class SupersededActivation extends Error {
  override name = 'SupersededActivation';
  constructor(readonly key: string) {
    super(`activation of ${key} stopped: the attachment is being removed`);
  }
}

interface Queue {
  /** Settles when the last work queued has ended. */
  tail: Promise<void>;
  /** Activations queued or running, to stop when a removal comes. */
  activations: Set<AbortController>;
}

/** `signal`'s reason as a rejection, once it fires; its listener goes with it. */
const abortedBy = (signal: AbortSignal): Promise<never> =>
  new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });

export class AttachmentLocks {
  private readonly queues = new Map<string, Queue>();

  /**
   * Runs `fn` once the work queued before it on `key` has ended. An activation gets a signal that
   * fires when a removal is queued behind it or `cancelled` fires (its activity was cancelled);
   * it must stop before its next kernel step and remove what it made. An activation stopped while
   * it waits for its turn never runs.
   */
  run<T>(
    key: string,
    work: AttachmentWork,
    fn: (stop: AbortSignal) => Promise<T>,
    cancelled?: AbortSignal,
  ): Promise<T> {
    const queue = this.queueOf(key);
    const own = new AbortController();
    if (work === 'removal')
      for (const activation of queue.activations) activation.abort(new SupersededActivation(key));
    else queue.activations.add(own);
    const stop = cancelled ? AbortSignal.any([own.signal, cancelled]) : own.signal;
    let started = false;
    const done = queue.tail.then(() => {
      stop.throwIfAborted();
      started = true;
      return fn(stop);
    });
    const tail = done.then(
      () => undefined,
      () => undefined,
    );
    queue.tail = tail;
    void tail.then(() => {
      queue.activations.delete(own);
      if (queue.tail === tail) this.queues.delete(key);
    });
    if (work === 'removal') return done;
    // Stopped while waiting: answered now, its place in the queue runs nothing.
    const waitEnded = abortedBy(stop).catch((reason: unknown) => {
      if (started) return done;
      throw reason;
    });
    return Promise.race([done, waitEnded]);
  }

  /** Whether any work on `key` is queued or running. */
  busy(key: string): boolean {
    return this.queues.has(key);
  }

  private queueOf(key: string): Queue {
    let queue = this.queues.get(key);
    if (!queue) {
      queue = { tail: Promise.resolve(), activations: new Set() };
      this.queues.set(key, queue);
    }
    return queue;
  }
}

/** The node agent's locks: one process drives its kernel, whoever asks (worker, offers). */
export const attachmentLocks = new AttachmentLocks();
