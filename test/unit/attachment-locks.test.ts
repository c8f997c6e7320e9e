// The node agent's per-attachment lock: work on one attachment runs in arrival order, one at a
// time; a removal stops the activations queued before it (running or waiting), not those after it;
// other attachments are not held back.
import { AttachmentLocks, SupersededActivation } from '../../activities/attachment-locks';

/** Work that runs until release() and records its start, its end and whether it saw a stop. */
function held(log: string[], name: string) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const work = async (stop: AbortSignal) => {
    log.push(`start ${name}`);
    started();
    await Promise.race([released, new Promise((resolve) => stop.addEventListener('abort', resolve))]);
    log.push(stop.aborted ? `stopped ${name}` : `end ${name}`);
    stop.throwIfAborted();
    return name;
  };
  return { work, release, running };
}

test('work on one attachment runs one at a time, in arrival order', async () => {
  const locks = new AttachmentLocks();
  const log: string[] = [];
  const first = held(log, 'a1');
  const one = locks.run('a', 'activation', first.work);
  const two = locks.run('a', 'activation', async () => void log.push('a2'));
  await first.running;
  expect(log).toEqual(['start a1']); // a2 waits behind a1
  first.release();
  await Promise.all([one, two]);
  expect(log).toEqual(['start a1', 'end a1', 'a2']);
  expect(locks.busy('a')).toBe(false);
});

test('another attachment is not held back', async () => {
  const locks = new AttachmentLocks();
  const log: string[] = [];
  const first = held(log, 'a1');
  const one = locks.run('a', 'activation', first.work);
  await locks.run('b', 'removal', async () => void log.push('b'));
  expect(log).toEqual(['start a1', 'b']);
  first.release();
  await one;
});

test('a removal stops the running activation and the waiting one, then runs; a later activation runs', async () => {
  const locks = new AttachmentLocks();
  const log: string[] = [];
  const first = held(log, 'a1');
  const running = locks.run('a', 'activation', first.work);
  const waiting = locks.run('a', 'activation', async () => void log.push('a2 ran'));
  await first.running;
  const removal = locks.run('a', 'removal', async () => void log.push('removed'));
  const after = locks.run('a', 'activation', async () => 'a3');
  await expect(running).rejects.toBeInstanceOf(SupersededActivation);
  await expect(waiting).rejects.toBeInstanceOf(SupersededActivation);
  await removal;
  expect(await after).toBe('a3');
  expect(log).toEqual(['start a1', 'stopped a1', 'removed']); // a2 never ran
});

test('an activation cancelled while it waits is answered at once and never runs', async () => {
  const locks = new AttachmentLocks();
  const log: string[] = [];
  const first = held(log, 'a1');
  const running = locks.run('a', 'activation', first.work);
  await first.running;
  const cancel = new AbortController();
  const waiting = locks.run('a', 'activation', async () => void log.push('a2 ran'), cancel.signal);
  cancel.abort(new Error('activity cancelled'));
  await expect(waiting).rejects.toThrow('activity cancelled');
  expect(log).toEqual(['start a1']); // a1 still holds the attachment
  first.release();
  await running;
  await locks.run('a', 'removal', async () => undefined); // the queue has drained past a2
  expect(log).toEqual(['start a1', 'end a1']);
});
