// The control worker's pool configuration: a pool's refusal stops it; any other failure is tried
// again while it runs (a worker that exited on it crash-looped under the soak's kills).
import { ConfigError } from '../../domain/config';
import { silentLog } from '../../observability/log';
import { configurePoolsWhileRunning } from '../../worker/control/pool-configuration';

const options = { log: silentLog(), maxBackoffMs: 5, firstTryMs: 1_000 };

test("a pool's refusal stops the worker: both promises reject with the ConfigError", async () => {
  let calls = 0;
  const configure = async () => {
    calls++;
    throw new ConfigError('pool default: blockSize changed under handed-out blocks');
  };
  const c = configurePoolsWhileRunning({ ...options, configure, running: () => true });
  await expect(c.firstTry).rejects.toThrow(/blockSize/);
  await expect(c.done).rejects.toBeInstanceOf(ConfigError);
  expect(calls).toBe(1);
});

test('another failure is tried again until it takes: the first try says pending', async () => {
  let calls = 0;
  const configure = async () => {
    if (++calls < 3) throw new Error('update not taken: the workflow task failed');
  };
  const c = configurePoolsWhileRunning({ ...options, configure, running: () => true });
  await expect(c.firstTry).resolves.toBe('pending');
  await expect(c.done).resolves.toBeUndefined();
  expect(calls).toBe(3);
});

test('a refusal after failures still stops the worker', async () => {
  let calls = 0;
  const configure = async () => {
    if (++calls < 2) throw new Error('Temporal away');
    throw new ConfigError('cidrs');
  };
  const c = configurePoolsWhileRunning({ ...options, configure, running: () => true });
  await expect(c.firstTry).resolves.toBe('pending');
  await expect(c.done).rejects.toThrow('cidrs');
  expect(calls).toBe(2); // stopped at the refusal, not tried again
});

test('the tries stop with the worker', async () => {
  let calls = 0;
  let running = true;
  const configure = async () => {
    if (++calls === 2) running = false;
    throw new Error('Temporal away');
  };
  const c = configurePoolsWhileRunning({ ...options, configure, running: () => running });
  await expect(c.done).resolves.toBeUndefined();
  expect(calls).toBe(2);
});

test('a first try that outlasts its time lets the worker go on; it is configured when it returns', async () => {
  let release!: () => void;
  const configure = () => new Promise<void>((resolve) => (release = resolve));
  const c = configurePoolsWhileRunning({ ...options, firstTryMs: 20, configure, running: () => true });
  await expect(c.firstTry).resolves.toBe('pending');
  release();
  await expect(c.done).resolves.toBeUndefined();
});

test('configured at the first try', async () => {
  const c = configurePoolsWhileRunning({ ...options, configure: async () => undefined, running: () => true });
  await expect(c.firstTry).resolves.toBe('configured');
});
