// What a watch that was away learns, against a real etcd + kube-apiserver of the test's own (it is
// restarted here). While the connection is merely down the watch goes on from the last
// resourceVersion it heard: a pod deleted meanwhile comes as its DELETED event, and nothing is
// listed again. When the server no longer has that point (a restarted apiserver's new watch cache
// answers 410 Gone) the loop lists again, and a pod or Node it knew that the list no longer holds
// is handed to its handler as deleted, by identity (the soak's 10,000 lifecycles: 16 leases waited
// for the reconciler's sweep because a relist after `restart-kube` never said their pods were gone).
// A NetleasePool deleted so is no longer offered to pool selection.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeSchema, PodSchema } from '../../domain/k8s';
import { connectKube, type KubeClients } from '../../kubernetes/kube';
import { watchForever, type WatchLoop } from '../../kubernetes/watch-loop';
import { ServedPoolObjects } from '../../kubernetes/pool-selectors';
import { startLocalKube, type LocalKube } from '../../tools/kube-apiserver';
import { freePort, waitFor } from '../../tools/processes';
import { installPoolCrd, poolObjects } from '../harness/pool-objects';
import { tcpProxy, type TcpProxy } from '../harness/tcp-proxy';

const dir = mkdtempSync(join(tmpdir(), 'netlease-relist-'));
let apiPort: number;
let kube: LocalKube;
let proxy: TcpProxy;
let direct: KubeClients; // the test's own writes
let watched: KubeClients; // the watch's, through the proxy
const loops: WatchLoop[] = [];

const startKube = async () => {
  kube = await startLocalKube({ dir: join(dir, 'kube'), apiPort });
  direct ??= await connectKube(kube.kubeconfig);
};

beforeAll(async () => {
  apiPort = await freePort();
  await startKube();
  proxy = await tcpProxy(`127.0.0.1:${apiPort}`);
  const through = join(dir, 'kubeconfig-through-proxy');
  writeFileSync(
    through,
    readFileSync(kube.kubeconfig, 'utf8').replace(`:${apiPort}`, `:${proxy.address.split(':')[1]}`),
  );
  watched = await connectKube(through);
}, 180_000);
afterAll(async () => {
  for (const loop of loops) loop.stop();
  await proxy?.close();
  await kube?.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Handled {
  type: string;
  name: string;
  uid: string;
  /** Whether the object came whole (a spec), or as an identity only. */
  whole: boolean;
  parses: boolean;
}

function watch(
  path: string,
  handled: Handled[],
  errors: unknown[],
  schema: typeof PodSchema | typeof NodeSchema,
) {
  const loop = watchForever(
    watched,
    path,
    async (type, object) => {
      const { metadata, spec } = object as { metadata: { name: string; uid: string }; spec?: unknown };
      handled.push({
        type,
        name: metadata.name,
        uid: metadata.uid,
        whole: spec !== undefined,
        parses: schema.safeParse(object).success,
      });
    },
    (err) => errors.push(err),
    { concurrency: 4 },
  );
  loops.push(loop);
  return loop;
}

const createPod = async (name: string) =>
  (
    await direct.core.createNamespacedPod({
      namespace: 'default',
      body: { metadata: { name }, spec: { containers: [{ name: 'c', image: 'none' }] } },
    })
  ).metadata?.uid ?? '';
const deletePod = (name: string) =>
  direct.core.deleteNamespacedPod({ name, namespace: 'default', gracePeriodSeconds: 0 });
const createNode = async (name: string) =>
  (await direct.core.createNode({ body: { metadata: { name } } })).metadata?.uid ?? '';

const PODS = '/api/v1/namespaces/default/pods';

test('a watch back from a dropped connection hears the deletion made meanwhile as an event, and lists nothing', async () => {
  const handled: Handled[] = [];
  const errors: unknown[] = [];
  const loop = watch(PODS, handled, errors, PodSchema);
  const [uid] = [await createPod('dropped-a'), await createPod('dropped-b')];
  expect(await waitFor(() => handled.filter((h) => h.name.startsWith('dropped-')).length === 2, 30_000)).toBe(
    true,
  );
  proxy.refuse();
  await deletePod('dropped-a');
  await proxy.restore();
  expect(
    await waitFor(() => handled.some((h) => h.type === 'DELETED' && h.name === 'dropped-a'), 30_000),
  ).toBe(true);
  loop.stop();
  // The deletion came whole, from the watch; nothing was listed again, nothing inferred.
  expect(handled.find((h) => h.type === 'DELETED')).toEqual({
    type: 'DELETED',
    name: 'dropped-a',
    uid,
    whole: true,
    parses: true,
  });
  expect(loop.stats).toMatchObject({ listed: 1, vanished: 0 });
  expect(handled.filter((h) => h.name === 'dropped-b')).toHaveLength(1);
});

test('after a restarted apiserver answers 410 Gone, the list again hands over what was deleted meanwhile', async () => {
  const handled: Handled[] = [];
  const errors: unknown[] = [];
  const pods = watch(PODS, handled, errors, PodSchema);
  const nodes = watch('/api/v1/nodes', handled, errors, NodeSchema);
  // The agent's NetleasePools (pool selection): a deleted pool must stop being offered.
  await installPoolCrd(direct);
  const pools = poolObjects(direct);
  await pools.create('pool-gone', { cidrs: ['10.9.0.0/16'] });
  await pools.create('pool-kept', { cidrs: ['10.8.0.0/16'] });
  const served = new ServedPoolObjects(watched).start((err) => errors.push(err));
  const poolNames = () => {
    const told = served.served();
    return told ? [...told.pools.map((p) => p.name), ...told.unread].sort() : undefined;
  };
  expect(await waitFor(() => poolNames()?.length === 2, 30_000)).toBe(true);
  const gone = await createPod('gone');
  const renamed = await createPod('reused'); // deleted and made again under its name: another UID
  await createPod('kept');
  const node = await createNode('node-gone');
  const names = ['gone', 'reused', 'kept', 'node-gone'];
  expect(await waitFor(() => names.every((n) => handled.some((h) => h.name === n)), 30_000)).toBe(true);
  const before = handled.length;

  proxy.refuse();
  await deletePod('gone');
  await deletePod('reused');
  const reused = await createPod('reused');
  await direct.core.deleteNode({ name: 'node-gone', gracePeriodSeconds: 0 });
  await pools.delete('pool-gone');
  await kube.stop(); // a new apiserver's watch cache starts after the watches' last resourceVersion
  await startKube();
  await proxy.restore();

  const since = () => handled.slice(before);
  const expected = 4; // gone, reused (old UID), node-gone deleted; reused (new UID) added
  expect(await waitFor(() => since().length >= expected, 60_000)).toBe(true);
  await waitFor(() => pods.pending === 0 && nodes.pending === 0, 10_000);
  pods.stop();
  nodes.stop();
  const byType = since()
    .map(({ type, uid, whole, parses }) => ({ type, uid, whole, parses }))
    .sort((a, b) => a.uid.localeCompare(b.uid));
  expect(byType).toEqual(
    [
      { type: 'DELETED', uid: gone, whole: false, parses: true },
      { type: 'DELETED', uid: renamed, whole: false, parses: true },
      { type: 'ADDED', uid: reused, whole: true, parses: true },
      { type: 'DELETED', uid: node, whole: false, parses: true },
    ].sort((a, b) => a.uid.localeCompare(b.uid)),
  );
  // Each loop listed twice (at its start, after the 410) and inferred the deletions; the pod that
  // did not change cost nothing.
  expect(pods.stats).toMatchObject({ listed: 2, vanished: 2 });
  expect(nodes.stats).toMatchObject({ listed: 2, vanished: 1 });
  expect(since().some((h) => h.name === 'kept')).toBe(false);
  // The deleted NetleasePool is no longer offered (its identity was enough); the other still is.
  expect(await waitFor(() => poolNames()?.join() === 'pool-kept', 30_000)).toBe(true);
  served.stop();
}, 240_000);
