// A real node: kube-scheduler places a pod made through the Kubernetes API on a kubelet whose
// containerd calls netlease through the conflist install-cni wrote. The pod runs with its
// lease's addresses: in status.podIPs and on eth0 in the namespace the runtime made, which its
// container shares. Its graceful deletion (the kubelet's own teardown, CNI DEL) releases the lease.
// Stopping the cluster with a pod running leaves nothing behind, on the node or in the machine's
// network namespace. The cluster (tools/cluster) has
// its own etcd and apiserver: the controllers act cluster-wide.
import { expectReplayed } from '../harness/replay';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { ipJson } from '../../kernel/ip';
import { findLink, LinkSchema, RouteEntrySchema } from '../../kernel/links';
import { isNotFound } from '../../kubernetes/kube';
import { BUSYBOX_IMAGE } from '../../tools/node-images';
import { isAlive, stopPid } from '../../tools/processes';
import { netnsOf, shimsOf, type Containerd } from '../../tools/containerd';
import { RECORD_DIR } from '../../tools/machine-routes';
import { mountsUnder } from '../../tools/mounts';
import { containersOfPod, runningOfPod, sandboxNetns, taskPid } from '../harness/real-node';
import { hostEnds } from '../harness/netns';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { leaseOfPod, useRealCluster } from '../harness/real-cluster';

const nodeName = uniqueName('real-node');
const namespace = 'default';
const real = useRealCluster({ prefix: 'real-node', nodeNames: [nodeName] });

const leaseOf = (uid: string) => leaseOfPod(real.temporal, uid);

const readPod = (name: string): Promise<V1Pod | undefined> =>
  real.core.readNamespacedPod({ name, namespace }).catch((err: unknown) => {
    if (isNotFound(err)) return undefined;
    throw err;
  });

const sorted = (values: string[]) => [...values].sort();

/** A busybox pod that sleeps; the scheduler picks its node. */
const createBusybox = (name: string) =>
  real.core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name },
      spec: {
        terminationGracePeriodSeconds: 2,
        containers: [
          { name: 'main', image: BUSYBOX_IMAGE, imagePullPolicy: 'Never', command: ['sleep', '3600'] },
        ],
      },
    },
  });

const untilRunning = (name: string) =>
  waitForValue(
    () => readPod(name),
    (pod) => pod?.status?.phase === 'Running',
    180_000,
    500,
    `pod ${name} Running`,
  );

test('a pod the scheduler puts on the real node runs with its lease addresses; deleting it releases them', async () => {
  const name = uniqueName('busybox');
  const created = await createBusybox(name);
  const uid = created.metadata?.uid ?? '';
  const started = Date.now();
  const running = await untilRunning(name);
  process.stdout.write(`real-node: pod Running ${Date.now() - started} ms after its create\n`);
  expect(running?.spec?.nodeName).toBe(nodeName); // placed by the real scheduler

  const lease = await waitForValue(
    () => leaseOf(uid),
    (s) => s?.phase === 'Running',
    60_000,
  );
  const addresses = (lease?.addresses ?? []).map((a) => a.address);
  expect(addresses).toHaveLength(2); // the test pool is dual-stack
  expect(sorted((running?.status?.podIPs ?? []).map((p) => p.ip))).toEqual(sorted(addresses));

  // The namespace the runtime made: the lease attached there, eth0 carries the addresses, and
  // the workload container (not only the sandbox) lives in it.
  const ctr = real.node.real.containerd.ctr;
  if (!ctr) throw new Error('no cluster');
  const { netns } = await sandboxNetns(ctr, uid);
  expect(lease?.attachments.map((a) => [a.netns, a.ifName, a.status])).toEqual([[netns, 'eth0', 'active']]);
  const [eth0] = await ipJson(netns, ['addr', 'show', 'dev', 'eth0'], LinkSchema);
  const onLink = (eth0?.addr_info ?? []).filter((a) => a.scope === 'global').map((a) => a.local);
  expect(sorted(onLink)).toEqual(sorted(addresses));
  const main = (await containersOfPod(ctr, uid)).find((c) => c.name === 'main');
  if (!main) throw new Error(`pod ${name} has no container main in containerd`);
  expect(statSync(`/proc/${await taskPid(ctr, main.id)}/ns/net`).ino).toBe(statSync(netns).ino);

  // A graceful deletion: the kubelet stops the pod, its sandbox's CNI DEL and the deletion end the lease.
  await real.core.deleteNamespacedPod({ name, namespace });
  const released = await waitForValue(
    () => leaseOf(uid),
    (s) => s?.phase === 'Released',
    120_000,
  );
  expect(released?.attachments).toEqual([]);
  await waitForValue(
    () => readPod(name),
    (pod) => pod === undefined,
    60_000,
    500,
    `pod ${name} gone`,
  );
  await waitForValue(
    async () => existsSync(netns),
    (exists) => !exists,
    60_000,
    500,
    `${netns} removed`,
  );
  // The kubelet removes a dead sandbox at its next container GC; none of the pod's tasks runs.
  expect(await runningOfPod(ctr, uid)).toEqual([]);
}, 600_000);

/** The pod's sandbox whose task runs, and the namespace the CRI made for it. */
async function runningSandbox(ctr: Containerd['ctr'], uid: string) {
  const running = new Set(await runningOfPod(ctr, uid));
  const sandbox = (await containersOfPod(ctr, uid)).find((c) => c.kind === 'sandbox' && running.has(c.id));
  return sandbox && { sandbox: sandbox.id, netns: (await netnsOf(ctr, sandbox.id)) ?? '' };
}

test('a node rebooted with a pod on it: the new sandbox holds the lease, the old one is torn down by DEL', async () => {
  const name = uniqueName('reboot');
  const uid = (await createBusybox(name)).metadata?.uid ?? '';
  await untilRunning(name);
  const before = await waitForValue(
    () => leaseOf(uid),
    (s) => s?.phase === 'Running',
    60_000,
  );
  const old = await sandboxNetns(real.node.real.containerd.ctr, uid);

  // Power off: every process of the node dies (the agent too) and /run is emptied; containerd's
  // and the kubelet's records on disk stay. Then the node boots and its agent starts again.
  if (real.node.agent) await stopPid(real.node.agent.pid);
  real.node.agent = undefined;
  await real.node.real.reboot();
  await real.node.startAgent();

  // The kubelet tears the dead sandbox down (a CNI DEL, its namespace gone) and gives the pod a
  // new one (a CNI ADD): the same lease and addresses, and only the new sandbox's attachment.
  const ctr = real.node.real.containerd.ctr;
  const fresh = await waitForValue(
    () => runningSandbox(ctr, uid),
    (found) => found !== undefined && found.sandbox !== old.sandbox,
    180_000,
    1000,
    `pod ${name} in a new sandbox`,
  );
  const netns = fresh?.netns ?? '';
  const after = await waitForValue(
    () => leaseOf(uid),
    (s) =>
      s?.attachments.length === 1 &&
      s.attachments[0]?.netns === netns &&
      s.attachments[0].status === 'active',
    120_000,
    1000,
    `${name}'s lease holding only its new sandbox`,
  );
  expect(after?.phase).toBe('Running');
  const addresses = (before?.addresses ?? []).map((a) => a.address);
  expect((after?.addresses ?? []).map((a) => a.address)).toEqual(addresses);
  const [eth0] = await ipJson(netns, ['addr', 'show', 'dev', 'eth0'], LinkSchema);
  expect(sorted((eth0?.addr_info ?? []).filter((a) => a.scope === 'global').map((a) => a.local))).toEqual(
    sorted(addresses),
  );
  // The host side: one host end, the new one, and each address routed to it.
  const host = after?.attachments[0]?.links?.host.name;
  expect(
    hostEnds(await ipJson(real.node.hostNetns, ['addr', 'show'], LinkSchema)).map((l) => l.ifname),
  ).toEqual([host]);
  for (const address of addresses) {
    const family = address.includes(':') ? 6 : 4;
    const routes = await ipJson(
      real.node.hostNetns,
      [`-${family}`, 'route', 'show', address],
      RouteEntrySchema,
    );
    expect(routes.map((r) => r.dev)).toEqual([host]);
  }
  const pod = await waitForValue(
    () => readPod(name),
    (p) => p?.status?.phase === 'Running' && (p.status.podIPs ?? []).length === 2,
    120_000,
  );
  expect(sorted((pod?.status?.podIPs ?? []).map((p) => p.ip))).toEqual(sorted(addresses));

  await real.core.deleteNamespacedPod({ name, namespace });
  const released = await waitForValue(
    () => leaseOf(uid),
    (s) => s?.phase === 'Released',
    120_000,
  );
  expect(released?.attachments).toEqual([]);
}, 600_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(real.temporal, 3); // the pods' leases and the node's workflow at least
});

test('stopping the cluster with a pod running leaves no process, shim, mount or namespace of it', async () => {
  const agent = real.node.agent;
  if (!agent) throw new Error('no agent');
  const name = uniqueName('left');
  const uid = (await createBusybox(name)).metadata?.uid ?? '';
  await untilRunning(name);
  const { netns } = await sandboxNetns(real.node.real.containerd.ctr, uid);
  expect(mountsUnder(netns)).toEqual([netns]); // the runtime's namespace, bind-mounted
  await stopPid(agent.pid);
  real.node.agent = undefined;
  await real.cluster.stop();
  expect(real.cluster.processes.filter((p) => isAlive(p.pid)).map((p) => p.pid)).toEqual([]);
  expect(shimsOf(real.node.real.containerd.socket)).toEqual([]);
  expect(mountsUnder(real.dir)).toEqual([]);
  expect(existsSync(netns)).toBe(false);
  // Nor anything in the machine's namespace (tools/node-reach): its link into the node's host
  // namespace (the pod's route went with it), the pool's routes, the record, the route monitor.
  expect(await findLink(undefined, real.node.reach.link)).toBeUndefined();
  for (const cidr of real.pool.cidrs)
    expect(
      await ipJson(
        undefined,
        [`-${cidr.includes(':') ? 6 : 4}`, 'route', 'show', 'root', cidr],
        RouteEntrySchema,
      ),
    ).toEqual([]);
  expect(existsSync(join(RECORD_DIR, `${real.node.reach.link}.json`))).toBe(false);
}, 300_000);
