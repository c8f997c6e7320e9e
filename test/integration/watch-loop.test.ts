// The control worker's watch against the real kube-apiserver: a pod whose event is slow to
// handle (its quorum read or signal waiting on a busy server) does not hold back other pods'
// events, and one pod's events still arrive at the handler in the order the server sent them.
import { watchForever, type WatchLoop } from '../../kubernetes/watch-loop';
import { testCluster, type TestCluster } from '../harness/kube';
import { waitFor } from '../../tools/processes';

let cluster: TestCluster;
const loops: WatchLoop[] = [];
beforeAll(async () => (cluster = await testCluster('watch-loop')));
afterAll(async () => {
  for (const loop of loops) loop.stop();
  await cluster?.close();
});

interface Seen {
  type: string;
  name: string;
  resourceVersion: number;
}

function seenOf(type: string, object: unknown): Seen {
  const meta = (object as { metadata?: { name?: string; resourceVersion?: string } }).metadata;
  return { type, name: meta?.name ?? '', resourceVersion: Number(meta?.resourceVersion ?? 0) };
}

function watchPods(concurrency: number, handle: (seen: Seen) => Promise<void>, errors: unknown[]) {
  const path = `/api/v1/namespaces/${cluster.namespace}/pods`;
  const loop = watchForever(
    cluster.clients,
    path,
    (t, o) => handle(seenOf(t, o)),
    (e) => errors.push(e),
    {
      concurrency,
    },
  );
  loops.push(loop);
  return loop;
}

test("a pod whose event is in hand does not hold back another pod's events", async () => {
  const errors: unknown[] = [];
  let quickHandled!: () => void;
  const quick = new Promise<void>((resolve) => (quickHandled = resolve));
  const handled: string[] = [];
  const loop = watchPods(
    16,
    async (seen) => {
      if (seen.name === 'slow' && seen.type === 'ADDED') {
        // Held until the other pod's event is handled: one serial loop would wait here forever.
        const deadline = new Promise((_, reject) => setTimeout(() => reject(new Error('held back')), 20_000));
        await Promise.race([quick, deadline]);
      }
      if (seen.name === 'quick') quickHandled();
      handled.push(`${seen.type} ${seen.name}`);
    },
    errors,
  );
  await cluster.createPod('slow', 'node-a');
  await cluster.createPod('quick', 'node-a');
  expect(await waitFor(() => handled.includes('ADDED slow') || errors.length > 0, 30_000)).toBe(true);
  loop.stop();
  expect(errors).toEqual([]);
  expect(handled.indexOf('ADDED quick')).toBeLessThan(handled.indexOf('ADDED slow'));
});

test("one pod's events reach the handler in the server's order, however long each takes", async () => {
  const errors: unknown[] = [];
  const seen: Seen[] = [];
  const loop = watchPods(
    16,
    async (event) => {
      if (event.name !== 'ordered') return;
      // The first events take longest: a queue that let the next one overtake would show it.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 300 - 100 * seen.length)));
      seen.push(event);
    },
    errors,
  );
  await cluster.createPod('ordered', 'node-b');
  await cluster.setPodPhase('ordered', 'Running');
  await cluster.setPodPhase('ordered', 'Succeeded');
  await cluster.deletePod('ordered', 'now');
  expect(await waitFor(() => seen.some((e) => e.type === 'DELETED') || errors.length > 0, 30_000)).toBe(true);
  loop.stop();
  expect(errors).toEqual([]);
  expect(seen[0]?.type).toBe('ADDED');
  expect(seen.at(-1)?.type).toBe('DELETED');
  expect(seen.length).toBeGreaterThanOrEqual(4); // added, Running, Succeeded, deleted
  const versions = seen.map((e) => e.resourceVersion);
  expect(versions).toEqual([...versions].sort((a, b) => a - b));
});
