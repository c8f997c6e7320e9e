// The watch's per-object queue (keys, not events): an object's waiting states collapse into its
// latest, one handling per object at a time, a key changed while in hand is handled again after,
// never more than `concurrency` keys at once, and its size is bounded by the objects however many
// events come while the handler is stuck.
import { ObjectQueue, type ObjectQueueOptions } from '../../kubernetes/object-queue';

/** A handler whose calls wait until released, recording what each got and how many ran at once. */
function stuckHandler() {
  const calls: { key: string; state: number }[] = [];
  const inHand = new Map<string, number>();
  let most = 0;
  let mostOfOneKey = 0;
  let open!: () => void;
  let gate = new Promise<void>((resolve) => (open = resolve));
  const handle = async (key: string, state: number) => {
    calls.push({ key, state });
    inHand.set(key, (inHand.get(key) ?? 0) + 1);
    mostOfOneKey = Math.max(mostOfOneKey, inHand.get(key) ?? 0);
    most = Math.max(
      most,
      [...inHand.values()].reduce((a, b) => a + b, 0),
    );
    await gate;
    inHand.set(key, (inHand.get(key) ?? 1) - 1);
    if (inHand.get(key) === 0) inHand.delete(key);
  };
  return {
    handle,
    calls,
    get most() {
      return most;
    },
    get mostOfOneKey() {
      return mostOfOneKey;
    },
    release() {
      open();
    },
    /** Calls from now on wait again. */
    stick() {
      gate = new Promise<void>((resolve) => (open = resolve));
    },
  };
}

const failHard = (err: unknown) => {
  throw err;
};

function queueOf(
  handle: ObjectQueueOptions<number>['handle'],
  more: Partial<ObjectQueueOptions<number>> = {},
) {
  return new ObjectQueue<number>({ concurrency: 8, handle, onError: failHard, ...more });
}

/** Lets every pending promise reaction run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

test("a key's states that come while it is in hand collapse into the latest, handled once after", async () => {
  const handler = stuckHandler();
  const queue = queueOf(handler.handle);
  queue.add('ns/a', 0);
  await settle();
  for (let state = 1; state <= 1000; state++) queue.add('ns/a', state);
  await settle();
  expect(handler.calls).toEqual([{ key: 'ns/a', state: 0 }]); // in hand: not started again
  expect(queue.size).toBe(1);
  handler.release();
  await queue.drained();
  expect(handler.calls).toEqual([
    { key: 'ns/a', state: 0 },
    { key: 'ns/a', state: 1000 },
  ]);
  expect(queue.size).toBe(0);
});

test('states that wait for a free slot collapse too, and `merge` decides what a key keeps', async () => {
  const handler = stuckHandler();
  const merged: [number, number][] = [];
  // Keep a "deletion" (negative) once seen, as the watch keeps a DELETED.
  const merge = (waiting: number, next: number) => (
    merged.push([waiting, next]),
    waiting < 0 ? waiting : next
  );
  const queue = queueOf(handler.handle, { concurrency: 1, merge });
  queue.add('ns/busy', 0);
  queue.add('ns/b', 1);
  queue.add('ns/b', 2);
  queue.add('ns/b', -3); // deleted
  queue.add('ns/b', 4); // (a late event after the deletion)
  expect(merged).toEqual([
    [1, 2],
    [2, -3],
    [-3, 4],
  ]);
  handler.release();
  await queue.drained();
  expect(handler.calls.map((c) => `${c.key} ${c.state}`)).toEqual(['ns/busy 0', 'ns/b -3']);
});

test('a key is never in hand twice at once, whatever comes and however many slots are free', async () => {
  const handler = stuckHandler();
  const queue = queueOf(handler.handle, { concurrency: 16 });
  for (let round = 0; round < 50; round++) {
    for (const key of ['a', 'b', 'c']) queue.add(key, round);
    if (round % 10 === 9) {
      handler.release();
      await settle();
      handler.stick();
    }
    await settle();
  }
  handler.release();
  await queue.drained();
  expect(handler.mostOfOneKey).toBe(1);
  expect(handler.most).toBeLessThanOrEqual(3);
  // Each key's last state was handled last.
  for (const key of ['a', 'b', 'c'])
    expect(handler.calls.filter((c) => c.key === key).at(-1)?.state).toBe(49);
});

test('a key changed while in hand is handled again once its handling ends, not before', async () => {
  const log: string[] = [];
  let finishFirst!: () => void;
  const first = new Promise<void>((resolve) => (finishFirst = resolve));
  const queue = queueOf(async (key, state) => {
    log.push(`start ${key} ${state}`);
    if (state === 1) await first;
    log.push(`end ${key} ${state}`);
  });
  queue.add('ns/a', 1);
  await settle();
  queue.add('ns/a', 2);
  await settle();
  expect(log).toEqual(['start ns/a 1']);
  finishFirst();
  await queue.drained();
  expect(log).toEqual(['start ns/a 1', 'end ns/a 1', 'start ns/a 2', 'end ns/a 2']);
});

test('no more than `concurrency` keys are in hand; the next starts when one ends', async () => {
  const log: string[] = [];
  const gates = new Map<string, () => void>();
  const queue = queueOf(
    (key) => {
      log.push(`start ${key}`);
      return new Promise<void>((resolve) => gates.set(key, resolve)).then(() => void log.push(`end ${key}`));
    },
    { concurrency: 2 },
  );
  ['a', 'b', 'c'].forEach((key, i) => queue.add(key, i));
  await settle();
  expect(log).toEqual(['start a', 'start b']);
  gates.get('b')?.();
  await settle();
  expect(log).toEqual(['start a', 'start b', 'end b', 'start c']);
  gates.get('a')?.();
  gates.get('c')?.();
  await queue.drained();
  expect(queue.size).toBe(0);
});

test('the size is bounded by the objects: 10,000 events of 10 pods with the handler stuck hold 10 entries', async () => {
  const handler = stuckHandler();
  const queue = queueOf(handler.handle, { concurrency: 4 });
  for (let event = 0; event < 10_000; event++) queue.add(`ns/pod-${event % 10}`, event);
  await settle();
  expect(queue.size).toBe(10);
  expect(handler.calls).toHaveLength(4); // the first four keys, in hand
  handler.release();
  await queue.drained();
  expect(handler.calls).toHaveLength(4 + 10); // each key's latest, once more
  const last = new Map(handler.calls.map((c) => [c.key, c.state]));
  expect([...last.values()].sort((a, b) => a - b)).toEqual([
    9990, 9991, 9992, 9993, 9994, 9995, 9996, 9997, 9998, 9999,
  ]);
});

test('a failed handling is reported with its key, and the key is handled again on its next state', async () => {
  const reported: string[] = [];
  const handled: number[] = [];
  const queue = queueOf(
    async (_, state) => {
      if (state === 1) throw new Error('quorum read refused');
      if (state === 2) throw new Error('thrown before any await');
      handled.push(state);
    },
    { concurrency: 1, onError: (err, key) => reported.push(`${key}: ${(err as Error).message}`) },
  );
  queue.add('ns/a', 1);
  await queue.drained();
  queue.add('ns/a', 2);
  await queue.drained();
  queue.add('ns/a', 3);
  await queue.drained();
  expect(reported).toEqual(['ns/a: quorum read refused', 'ns/a: thrown before any await']);
  expect(handled).toEqual([3]);
});

test('a reporter that throws does not stop the queue', async () => {
  const handled: number[] = [];
  const queue = queueOf(
    async (_, state) => {
      if (state === 1) throw new Error('refused');
      handled.push(state);
    },
    {
      onError: () => {
        throw new Error('the reporter failed too');
      },
    },
  );
  queue.add('ns/a', 1);
  await queue.drained();
  queue.add('ns/a', 2);
  await queue.drained();
  expect(handled).toEqual([2]);
});

test('clear forgets what waits; what is in hand runs to its end', async () => {
  const handler = stuckHandler();
  const queue = queueOf(handler.handle, { concurrency: 1 });
  queue.add('a', 1);
  queue.add('b', 2);
  queue.add('a', 3);
  await settle();
  queue.clear();
  expect(queue.size).toBe(1); // a, in hand
  handler.release();
  await queue.drained();
  expect(handler.calls).toEqual([{ key: 'a', state: 1 }]);
});

test('a concurrency that is no positive integer is refused', () => {
  const handle = async () => undefined;
  expect(() => queueOf(handle, { concurrency: 0 })).toThrow('concurrency must be a positive integer, got 0');
  expect(() => queueOf(handle, { concurrency: 1.5 })).toThrow(
    'concurrency must be a positive integer, got 1.5',
  );
});
