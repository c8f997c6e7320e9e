// The watch's event queue: one object's events in order, different objects' side by side, never
// more than the limit at once, and a failure that neither stops the object's later events nor
// leaks its entry.
import { ObjectQueue } from '../../kubernetes/object-queue';

/** A task that runs until its release() is called, recording when it started and ended. */
function gate(log: string[], name: string) {
  let release!: () => void;
  const done = new Promise<void>((resolve) => (release = resolve));
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const task = async () => {
    log.push(`start ${name}`);
    started();
    await done;
    log.push(`end ${name}`);
  };
  return { task, release, running };
}

const failHard = (err: unknown) => {
  throw err;
};

test("one object's events run in arrival order, even when the first is the slow one", async () => {
  const queue = new ObjectQueue(8);
  const log: string[] = [];
  const first = gate(log, 'a1');
  queue.push('ns/a', first.task, failHard);
  queue.push('ns/a', async () => void log.push('a2'), failHard);
  await first.running;
  expect(log).toEqual(['start a1']); // a2 waits although slots are free
  first.release();
  await queue.drained();
  expect(log).toEqual(['start a1', 'end a1', 'a2']);
  expect(queue.pending).toBe(0);
});

test("another object's event runs while the first object's is still in hand", async () => {
  const queue = new ObjectQueue(8);
  const log: string[] = [];
  const slow = gate(log, 'a');
  queue.push('ns/a', slow.task, failHard);
  const other = gate(log, 'b');
  queue.push('ns/b', other.task, failHard);
  await other.running; // would never resolve if b waited behind a
  expect(log).toEqual(['start a', 'start b']);
  other.release();
  slow.release();
  await queue.drained();
  expect(log.slice(2).sort()).toEqual(['end a', 'end b']);
});

test('no more than the limit run at once; the next starts when one ends', async () => {
  const queue = new ObjectQueue(2);
  const log: string[] = [];
  const [a, b, c] = [gate(log, 'a'), gate(log, 'b'), gate(log, 'c')];
  [a, b, c].forEach((g, i) => queue.push(`ns/${i}`, g.task, failHard));
  await Promise.all([a.running, b.running]);
  await new Promise((resolve) => setImmediate(resolve)); // c had its chance to start
  expect(log).toEqual(['start a', 'start b']);
  b.release();
  await c.running;
  expect(log).toEqual(['start a', 'start b', 'end b', 'start c']);
  a.release();
  c.release();
  await queue.drained();
  expect(queue.pending).toBe(0);
});

test("a failed event is reported and the object's next event still runs", async () => {
  const queue = new ObjectQueue(1);
  const reported: unknown[] = [];
  const log: string[] = [];
  queue.push(
    'ns/a',
    () => Promise.reject(new Error('quorum read refused')),
    (err) => reported.push(err),
  );
  queue.push(
    'ns/a',
    () => {
      throw new Error('thrown before any await');
    },
    (err) => reported.push(err),
  );
  queue.push('ns/a', async () => void log.push('after'), failHard);
  await queue.drained();
  expect(reported.map((err) => (err as Error).message)).toEqual([
    'quorum read refused',
    'thrown before any await',
  ]);
  expect(log).toEqual(['after']);
  expect(queue.pending).toBe(0);
});

test('a limit that is no positive integer is refused', () => {
  expect(() => new ObjectQueue(0)).toThrow('limit must be a positive integer, got 0');
  expect(() => new ObjectQueue(1.5)).toThrow('limit must be a positive integer, got 1.5');
});

test("a reporter that throws does not stop the object's next event", async () => {
  const queue = new ObjectQueue(1);
  const log: string[] = [];
  queue.push(
    'ns/a',
    () => Promise.reject(new Error('refused')),
    () => {
      throw new Error('the reporter failed too');
    },
  );
  queue.push('ns/a', async () => void log.push('next'), failHard);
  await queue.drained();
  expect(log).toEqual(['next']);
});
