// lanesUntil (test/bench/phases): a failed task stops new ones and is thrown only once every lane
// has finished its task in hand, so a caller that closes its connection next leaves no call on it
// (the 1,000-node scale run crashed on a client retry timer after its connection closed).
import { lanesUntil } from '../bench/phases';

test('a failure is thrown after the tasks in flight have finished, and no task starts after it', async () => {
  const finished: number[] = [];
  let started = 0;
  let release: () => void = () => undefined;
  const slowOnesDone = new Promise<void>((resolve) => (release = resolve));
  const run = lanesUntil(100, 3, 60_000, async () => {
    const n = ++started;
    if (n === 2) throw new Error('task 2 failed');
    if (n <= 3) await slowOnesDone; // tasks 1 and 3 are still running when 2 fails
    finished.push(n);
  });
  let settled = false;
  void run.catch(() => undefined).then(() => (settled = true));
  await new Promise((resolve) => setImmediate(resolve));
  expect(settled).toBe(false);
  release();
  await expect(run).rejects.toThrow('task 2 failed');
  expect(finished.sort()).toEqual([1, 3]);
  expect(started).toBe(3);
});

test('without a failure: every task runs, in lanes', async () => {
  let ran = 0;
  expect(await lanesUntil(10, 3, 60_000, async () => void ran++)).toBe(10);
  expect(ran).toBe(10);
});
