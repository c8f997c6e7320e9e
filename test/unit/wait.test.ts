// The harness's wait fails at its deadline (a wait that returned quietly let a test assert on a
// value that never came), naming what it waited for and the last value it read.
import { WaitTimedOut, waitForValue } from '../harness/wait';

test('returns the first value the condition holds for', async () => {
  let reads = 0;
  const value = await waitForValue(
    async () => ++reads,
    (n) => n === 3,
    5000,
    1,
  );
  expect(value).toBe(3);
});

test('throws at the deadline, naming the condition and the last value seen', async () => {
  const started = Date.now();
  const failure = await waitForValue(
    async () => ({ phase: 'Producing' }),
    (s) => s.phase === 'Active',
    200,
    10,
  ).catch((err: unknown) => err);
  expect(Date.now() - started).toBeGreaterThanOrEqual(200);
  expect(failure).toBeInstanceOf(WaitTimedOut);
  expect((failure as Error).message).toMatch(/^waited 200 ms for \(s\) => s\.phase === 'Active' on /);
  expect((failure as Error).message).toContain("last value: { phase: 'Producing' }");
});

test('a description given by the caller names the wait', async () => {
  const failure = await waitForValue(
    async () => 1,
    () => false,
    0,
    1,
    'lease of pod p in phase Active',
  ).catch((err: unknown) => err);
  expect((failure as Error).message).toBe('waited 0 ms for lease of pod p in phase Active; last value: 1');
});
