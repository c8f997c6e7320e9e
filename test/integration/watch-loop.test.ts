// The control worker's watch against the real kube-apiserver: a pod whose handling is slow (its
// quorum read or signal waiting on a busy server) does not hold back other pods; one pod's states
// reach the handler in the server's order, one at a time, and while its handling is stuck its
// events collapse into one entry holding its latest state (a deletion is never lost); a
// connection gone silent is noticed and reopened.
import { performance } from 'node:perf_hooks';
import { DEFAULT_KUBE_TIMEOUTS } from '../../domain/config';
import { connectKube, type KubeClients } from '../../kubernetes/kube';
import { watchForever, type WatchLoop } from '../../kubernetes/watch-loop';
import { errorMessage } from '../../observability/log';
import { apiServerAddress, kubeconfigThrough, testCluster, type TestCluster } from '../harness/kube';
import { tcpProxy } from '../harness/tcp-proxy';
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

function watchPods(
  concurrency: number,
  handle: (seen: Seen) => Promise<void>,
  errors: unknown[],
  clients: KubeClients = cluster.clients,
) {
  const path = `/api/v1/namespaces/${cluster.namespace}/pods`;
  const loop = watchForever(
    clients,
    path,
    (t, o) => handle(seenOf(t, o)),
    (e) => errors.push(e),
    { concurrency },
  );
  loops.push(loop);
  return loop;
}

/** A promise the test resolves: a handler waits on it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
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

test("one pod's states reach the handler in the server's order, one at a time, however long each takes", async () => {
  const errors: unknown[] = [];
  const seen: Seen[] = [];
  let inHand = 0;
  let mostInHand = 0;
  const loop = watchPods(
    16,
    async (event) => {
      if (event.name !== 'ordered') return;
      mostInHand = Math.max(mostInHand, ++inHand);
      // The first states take longest: a queue that let the next one overtake would show it.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 300 - 100 * seen.length)));
      seen.push(event);
      inHand--;
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
  expect(mostInHand).toBe(1);
  expect(seen[0]?.type).toBe('ADDED');
  expect(seen.at(-1)?.type).toBe('DELETED');
  const versions = seen.map((e) => e.resourceVersion);
  expect(new Set(versions).size).toBe(versions.length);
  expect(versions).toEqual([...versions].sort((a, b) => a - b));
});

test('while its handling is stuck, 200 updates of one pod hold one entry; then its latest state is handled', async () => {
  const errors: unknown[] = [];
  const seen: Seen[] = [];
  const stuck = gate();
  const loop = watchPods(
    4,
    async (event) => {
      if (event.name !== 'busy') return;
      seen.push(event);
      if (event.type === 'ADDED') await stuck.opened; // Temporal down: the handler waits
    },
    errors,
  );
  await cluster.createPod('busy', 'node-c');
  expect(await waitFor(() => seen.length === 1, 30_000)).toBe(true);
  const before = loop.stats.events; // the namespace's other pods were listed too
  let latest = 0;
  for (let step = 1; step <= 200; step++) latest = await cluster.labelPod('busy', String(step));
  // All 200 events reached the loop; they wait as one entry.
  expect(await waitFor(() => loop.stats.events >= before + 200 || errors.length > 0, 30_000)).toBe(true);
  expect(loop.pending).toBe(1);
  stuck.open();
  expect(await waitFor(() => loop.pending === 0, 30_000)).toBe(true);
  loop.stop();
  expect(errors).toEqual([]);
  expect(seen.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED']);
  expect(seen[1]?.resourceVersion).toBe(latest);
});

test('a deletion that comes after updates while the pod is in hand is not lost', async () => {
  const errors: unknown[] = [];
  const seen: Seen[] = [];
  const stuck = gate();
  const loop = watchPods(
    4,
    async (event) => {
      if (event.name !== 'doomed') return;
      seen.push(event);
      if (event.type === 'ADDED') await stuck.opened;
    },
    errors,
  );
  await cluster.createPod('doomed', 'node-c');
  expect(await waitFor(() => seen.length === 1, 30_000)).toBe(true);
  const before = loop.stats.deleted;
  await cluster.labelPod('doomed', 'one');
  await cluster.labelPod('doomed', 'two');
  await cluster.deletePod('doomed', 'now');
  // Its deletion (the last of its events: all came) reached the loop.
  expect(await waitFor(() => loop.stats.deleted > before || errors.length > 0, 30_000)).toBe(true);
  stuck.open();
  expect(await waitFor(() => loop.pending === 0, 30_000)).toBe(true);
  loop.stop();
  expect(errors).toEqual([]);
  expect(seen.map((e) => e.type)).toEqual(['ADDED', 'DELETED']);
});

test('a watch whose connection goes silent is reported within its bound and reopened', async () => {
  const proxy = await tcpProxy(apiServerAddress());
  try {
    const silenceSeconds = 2;
    const timeouts = { ...DEFAULT_KUBE_TIMEOUTS, watchSilenceSeconds: silenceSeconds };
    const clients = await connectKube(kubeconfigThrough(proxy.address), timeouts);
    const errors: unknown[] = [];
    const handled = new Set<string>();
    const loop = watchPods(4, async (event) => void handled.add(event.name), errors, clients);
    await cluster.createPod('before-silence', 'node-d');
    expect(await waitFor(() => handled.has('before-silence'), 30_000)).toBe(true);
    proxy.stall(); // the connection stays open, nothing passes: no error ever comes by itself
    const stalledAt = performance.now();
    const reportedBefore = errors.length;
    await cluster.createPod('during-silence', 'node-d');
    const silent = () =>
      errors
        .slice(reportedBefore)
        .map(errorMessage)
        .find((m) => /no event or bookmark/.test(m));
    expect(await waitFor(() => silent() !== undefined, silenceSeconds * 1000 * 5)).toBe(true);
    expect(performance.now() - stalledAt).toBeLessThan(silenceSeconds * 1000 * 3);
    expect(silent()).toBe(`watch /api/v1/namespaces/${cluster.namespace}/pods: no event or bookmark in 2 s`);
    expect(handled.has('during-silence')).toBe(false);
    const openedBefore = loop.stats.opened;
    await proxy.restore();
    // Reopened (it goes on from the last resourceVersion it heard): the pod made while it was silent is seen.
    expect(await waitFor(() => handled.has('during-silence'), 30_000)).toBe(true);
    expect(loop.stats.opened).toBeGreaterThan(openedBefore);
    loop.stop();
  } finally {
    await proxy.close();
  }
});

test('a failed handling is tried again with no new event, until it succeeds', async () => {
  const errors: unknown[] = [];
  const tries: Seen[] = [];
  const loop = watchPods(
    4,
    async (event) => {
      if (event.name !== 'flaky') return;
      tries.push(event);
      // Its first two handlings fail, as a quorum read or a signal refused while a link is down.
      if (tries.length <= 2) throw new Error(`refused ${tries.length}`);
    },
    errors,
  );
  await cluster.createPod('flaky', 'node-e');
  expect(await waitFor(() => tries.length >= 3 || errors.length > 2, 30_000)).toBe(true);
  expect(await waitFor(() => loop.pending === 0, 10_000)).toBe(true);
  loop.stop();
  expect(errors.map(errorMessage)).toEqual(['refused 1', 'refused 2']);
  expect(tries.map((t) => t.type)).toEqual(['ADDED', 'ADDED', 'ADDED']);
  expect(new Set(tries.map((t) => t.resourceVersion)).size).toBe(1); // the same state, no new event
  expect(loop.stats.retried).toBe(2);
});
