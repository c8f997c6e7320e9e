// Waiting on a condition with a deadline, never on a fixed sleep. A wait that reaches its
// deadline fails the test, naming what it waited for and what it saw last.
import { inspect } from 'node:util';

/**
 * Until `done(value)` holds for a value `read` returns; throws at the deadline. `what` names the
 * wait in that error (default: the source of `done` and `read`).
 */
export async function waitForValue<T, U extends T>(
  read: () => Promise<T>,
  done: (value: T) => value is U,
  timeoutMs: number,
  everyMs?: number,
  what?: string,
): Promise<U>;
export async function waitForValue<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
  everyMs?: number,
  what?: string,
): Promise<T>;
export async function waitForValue<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
  everyMs = 100,
  what = `${String(done)} on ${String(read)}`,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() >= deadline) throw new WaitTimedOut(what, timeoutMs, value);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

export class WaitTimedOut extends Error {
  override name = 'WaitTimedOut';
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
    readonly last: unknown,
  ) {
    super(
      `waited ${timeoutMs} ms for ${what}; last value: ${inspect(last, { depth: 6, breakLength: Infinity, maxStringLength: 2000 })}`,
    );
  }
}
