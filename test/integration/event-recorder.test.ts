// kubernetes/events against the real kube-apiserver: the same object and reason again patches one
// Event's count (another reason is another Event); recording returns at once and never throws,
// past its queue's bound a note is dropped, and an API server that does not answer costs a
// counted failure, not the caller's time.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { connectKube } from '../../kubernetes/kube';
import { eventRecorder, type EventNote, type EventOutcome } from '../../kubernetes/events';
import { silentLog } from '../../observability/log';
import { kubeconfigThrough, testCluster, type TestCluster } from '../harness/kube';
import { waitForValue } from '../harness/wait';

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await testCluster('events');
});
afterAll(() => cluster?.close());

const note = (name: string, reason: string, message: string): EventNote => ({
  object: { apiVersion: 'v1', kind: 'Pod', namespace: cluster.namespace, name, uid: randomUUID() },
  type: 'Warning',
  reason,
  message,
});

function recorder(kube: Awaited<ReturnType<typeof connectKube>>, maxQueued?: number) {
  const outcomes: EventOutcome[] = [];
  const events = eventRecorder({
    kube,
    component: 'netlease-test',
    host: 'test-node',
    log: silentLog(),
    counted: (o) => outcomes.push(o),
    ...(maxQueued ? { maxQueued } : {}),
  });
  return { events, outcomes };
}

const eventsOf = async (uid: string) =>
  (
    await cluster.clients.core.listNamespacedEvent({
      namespace: cluster.namespace,
      fieldSelector: `involvedObject.uid=${uid}`,
    })
  ).items;

test('the same pod and reason three times is one Event of count 3; another reason is another Event', async () => {
  const { events, outcomes } = recorder(cluster.clients);
  const pod = note('p', 'PoolExhausted', 'pool-exhausted: first');
  events.record(pod);
  events.record({ ...pod, message: 'pool-exhausted: second' });
  events.record({ ...pod, message: 'pool-exhausted: third' });
  events.record({ ...pod, reason: 'ActivationFailed', message: 'activation-failed: x' });
  await events.flushed();
  const written = (await eventsOf(pod.object.uid ?? '')).map((e) => ({
    reason: e.reason,
    count: e.count,
    message: e.message,
    source: e.source?.component,
  }));
  expect(written.sort((a, b) => (a.reason ?? '').localeCompare(b.reason ?? ''))).toEqual([
    { reason: 'ActivationFailed', count: 1, message: 'activation-failed: x', source: 'netlease-test' },
    { reason: 'PoolExhausted', count: 3, message: 'pool-exhausted: third', source: 'netlease-test' },
  ]);
  expect(outcomes.sort()).toEqual(['created', 'created', 'patched', 'patched']);
  await events.close();
});

test('past the queue bound a note is dropped; the rest are written', async () => {
  const { events, outcomes } = recorder(cluster.clients, 2);
  const notes = [1, 2, 3, 4, 5].map((i) => note(`q${i}`, 'PoolExhausted', `m${i}`));
  for (const n of notes) events.record(n); // the first is taken off the queue at once, two wait
  await events.flushed();
  expect(outcomes.filter((o) => o === 'dropped').length).toBe(2);
  expect(outcomes.filter((o) => o === 'created').length).toBe(3);
  expect((await eventsOf(notes[0]?.object.uid ?? '')).length).toBe(1);
  expect(await eventsOf(notes[4]?.object.uid ?? '')).toEqual([]);
  await events.close();
});

test('an API server that does not answer: record returns at once, the note is counted failed', async () => {
  // A listener that accepts and never answers: each call waits out the kube call timeout.
  const silent = createServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const { port } = silent.address() as { port: number };
  try {
    const kube = await connectKube(kubeconfigThrough(`127.0.0.1:${port}`), {
      ...cluster.clients.timeouts,
      callSeconds: 1,
    });
    const { events, outcomes } = recorder(kube);
    const started = Date.now();
    events.record(note('away', 'PoolExhausted', 'm'));
    expect(Date.now() - started).toBeLessThan(50);
    await waitForValue(
      async () => outcomes,
      (o) => o.includes('failed'),
      10_000,
    );
    await events.close();
  } finally {
    silent.close();
  }
});
