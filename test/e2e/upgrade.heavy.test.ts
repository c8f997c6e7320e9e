// netlease installed as pods (NETLEASE_E2E_IN_CLUSTER=1; skipped otherwise) is upgraded the way an
// operator upgrades a CNI, while a Deployment churns on both nodes (pods deleted and replaced
// throughout): `helm upgrade` rolls the agent DaemonSet to a new image one node at a time, then the
// control Deployment. Meanwhile the kubelet's ADDs may get 11 and be retried, and DELs made while
// an agent is away are queued by the shim on the host. Judged from outside: every pod ends Running
// with its lease's addresses, every deleted pod's lease ends Released (no DEL lost), no address is
// ever on two live pods nor held twice in the nodes' tables, the DEL queues drain and each node's
// host ends are exactly its pods'. Then `helm uninstall` removes the conflist and the shim from
// both nodes and leaves no netlease process.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { addressOwnershipFindings } from '../../domain/address-ownership';
import type { LeaseState } from '../../domain/lease';
import { nodeWorkflowId } from '../../domain/ids';
import { hostDirsOf } from '../../tools/cluster';
import { RELEASE_NAMESPACE, type ChartValues } from '../../tools/in-cluster';
import { ensureNetleaseImage, type NetleaseImage } from '../../tools/netlease-image';
import { QueuedCallSchema } from '../../worker/agent/delete-queue';
import { isCompleteFile } from '../../storage/durable-files';
import { nodeStateQuery } from '../../workflows/node-messages';
import { hostEnds } from '../harness/netns';
import { expectReplayed } from '../harness/replay';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { ipJson } from '../../kernel/ip';
import { LinkSchema } from '../../kernel/links';
import {
  inClusterMode,
  leaseOfPod,
  sleepersDeployment,
  spreadOverNodes,
  useRealCluster,
} from '../harness/real-cluster';

const ROOT = join(__dirname, '..', '..', '..');
const REPLICAS = 8;
const nodeNames: [string, string] = [uniqueName('upg-a'), uniqueName('upg-b')];
const namespace = 'default';
const app = uniqueName('churn');
const inCluster = inClusterMode() ? test : test.skip;

const real = useRealCluster(
  { prefix: 'upgrade', nodeNames, preProduce: true },
  { startMs: 400_000, stopMs: 240_000, enabled: inClusterMode() },
);

const podsOfApp = async (): Promise<V1Pod[]> =>
  (await real.core.listNamespacedPod({ namespace, labelSelector: `app=${app}` })).items;
const uidOf = (pod: V1Pod) => pod.metadata?.uid ?? '';
const live = (p: V1Pod) => !p.metadata?.deletionTimestamp;
const addressesOf = (lease: LeaseState | undefined) => (lease?.addresses ?? []).map((a) => a.address);

/** What the churn saw: every pod UID, the ones it deleted, and any address on two live pods. */
interface Churn {
  seen: Set<string>;
  deleted: Set<string>;
  sharedAddresses: string[];
  samples: number;
}

/**
 * Deletes one pod of the app every `everyMs` (the ReplicaSet replaces it) and samples pod IPs,
 * until `stop()`, which resolves to what it saw.
 */
function churning(everyMs: number): { seen: Churn; stop(): Promise<Churn> } {
  const seen: Churn = { seen: new Set(), deleted: new Set(), sharedAddresses: [], samples: 0 };
  let done = false;
  const loop = (async () => {
    for (let round = 0; !done; round++) {
      const pods = (await podsOfApp()).filter(live);
      seen.samples++;
      const holders = new Map<string, string>();
      for (const pod of pods) {
        seen.seen.add(uidOf(pod));
        for (const ip of pod.status?.podIPs ?? []) {
          const other = holders.get(ip.ip);
          if (other && other !== uidOf(pod))
            seen.sharedAddresses.push(`${ip.ip}: ${other} and ${uidOf(pod)}`);
          holders.set(ip.ip, uidOf(pod));
        }
      }
      const victim = pods[round % Math.max(1, pods.length)];
      if (victim?.metadata?.name) {
        await real.core.deleteNamespacedPod({ namespace, name: victim.metadata.name }).catch(() => undefined);
        seen.deleted.add(uidOf(victim));
      }
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    seen,
    async stop() {
      done = true;
      await loop;
      return seen;
    },
  };
}

const delQueueOf = (node: string) => join(hostDirsOf(real.dir).state, node, 'cni-del-queue');

/** The DELs queued on a node (the shim's files on the host; not a dead writer's temporaries). */
const queuedOn = (node: string): string[] =>
  existsSync(delQueueOf(node))
    ? readdirSync(delQueueOf(node)).filter((name) => isCompleteFile(name, '.json'))
    : [];

/** Entries waiting in each node's DEL queue. */
const queuedDels = () => nodeNames.map((node) => queuedOn(node).length);

/** The DELs still queued, each with its pod and where its lease is: what a failed drain names. */
async function queuedDelsDescribed(): Promise<string[]> {
  const entries = nodeNames.flatMap((node) =>
    queuedOn(node).map((file) => ({ node, file, text: readQueuedText(node, file) })),
  );
  return Promise.all(
    entries
      .filter((e) => e.text !== '')
      .map(async ({ node, file, text }) => {
        const call = QueuedCallSchema.safeParse(JSON.parse(text));
        if (!call.success) return `${node}/${file}: unreadable`;
        const args = Object.fromEntries(
          (call.data.env.CNI_ARGS ?? '').split(';').map((kv) => kv.split('=') as [string, string]),
        );
        const uid = args.K8S_POD_UID ?? '';
        const lease = uid ? await leaseOfPod(real.temporal, uid) : undefined;
        return (
          `${node}/${file}: pod ${args.K8S_POD_NAME ?? '?'} uid ${uid} container ` +
          `${(call.data.env.CNI_CONTAINERID ?? '').slice(0, 12)}, lease ${lease?.phase ?? 'none'} ` +
          `(${lease?.attachments.map((a) => `${a.containerId.slice(0, 12)} ${a.status}`).join(', ') ?? ''})`
        );
      }),
  );
}

function readQueuedText(node: string, file: string): string {
  try {
    return readFileSync(join(delQueueOf(node), file), 'utf8');
  } catch {
    return ''; // applied and removed since it was listed
  }
}

/** The images the agent DaemonSet's and the control Deployment's pods run now (ready ones). */
async function runningImages(): Promise<{ agent: string[]; control: string[] }> {
  const pods = (await real.core.listNamespacedPod({ namespace: RELEASE_NAMESPACE })).items.filter(live);
  const imagesOf = (label: string) =>
    pods
      .filter((p) => p.metadata?.labels?.app === label)
      .filter((p) => p.status?.containerStatuses?.every((c) => c.ready))
      .map((p) => p.spec?.containers[0]?.image ?? '');
  return { agent: imagesOf('netlease-node-agent'), control: imagesOf('netlease-control') };
}

/** netlease processes of this cluster: those whose environment names one of its nodes. */
function netleaseProcesses(): number[] {
  const names = nodeNames.map((n) => `NETLEASE_NODE_NAME=${n}`);
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .filter((pid) => {
      try {
        const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
        return environ.some((v) => names.includes(v));
      } catch {
        return false;
      }
    })
    .map(Number);
}

let next: NetleaseImage;

inCluster(
  'rolling updates of the agent DaemonSet, then the control Deployment, while pods churn',
  async () => {
    const installed = real.installed;
    if (!installed) throw new Error('netlease is not installed as pods');
    await real.apps.createNamespacedDeployment({
      namespace,
      body: spreadOverNodes(sleepersDeployment(app, REPLICAS)),
    });
    await waitForValue(
      podsOfApp,
      (ps) => ps.filter((p) => p.status?.phase === 'Running').length === REPLICAS,
      180_000,
      500,
      `${REPLICAS} pods of ${app} Running`,
    );
    // The new image: the same files under a new tag and config (a new image ID), on both nodes.
    const current = ensureNetleaseImage(ROOT);
    next = ensureNetleaseImage(ROOT, `${current.tag}-next`);
    for (const node of real.nodes) await node.real.containerd.ctr(['images', 'import', next.file]);
    const nextRef = `${installed.values.image.repository}:${next.tag}`;

    const churn = churning(700);
    let queuedMost = 0;
    const watchQueue = setInterval(() => (queuedMost = Math.max(queuedMost, ...queuedDels())), 100);
    await waitForValue(
      async () => churn.seen.deleted.size,
      (n) => n >= 3,
      60_000,
      200,
      'the churn under way',
    );
    const started = Date.now();
    const nextAgent = (v: ChartValues) => ({
      ...v,
      nodeAgent: { ...(v.nodeAgent as object), imageTag: next.tag },
    });
    await installed.upgrade(nextAgent);
    const rolled =
      (want: { agent: number; control: number }) => (images: { agent: string[]; control: string[] }) =>
        images.agent.filter((i) => i === nextRef).length === want.agent &&
        images.control.filter((i) => i === nextRef).length === want.control &&
        images.agent.length === nodeNames.length &&
        images.control.length === 2;
    await waitForValue(
      runningImages,
      rolled({ agent: 2, control: 0 }),
      180_000,
      500,
      'both agents on the new image',
    );
    const agentRolled = (Date.now() - started) / 1000;
    const nextControl = (v: ChartValues) => ({
      ...v,
      control: { ...(v.control as object), imageTag: next.tag },
    });
    await installed.upgrade(nextControl);
    await waitForValue(
      runningImages,
      rolled({ agent: 2, control: 2 }),
      180_000,
      500,
      'both control replicas on the new image',
    );
    const controlRolled = (Date.now() - started) / 1000 - agentRolled;
    // Churn on after both rollouts, with the new agents and control workers.
    const deletedByNow = churn.seen.deleted.size;
    await waitForValue(
      async () => churn.seen.deleted.size,
      (n) => n >= Math.max(12, deletedByNow + 3),
      120_000,
      200,
    );
    const seen = await churn.stop();
    clearInterval(watchQueue);
    process.stdout.write(
      `upgrade: agents rolled in ${agentRolled.toFixed(1)} s, control in ${controlRolled.toFixed(1)} s; ` +
        `${seen.deleted.size} pods deleted, ${seen.seen.size} seen, ${seen.samples} samples, at most ${queuedMost} DELs queued\n`,
    );
    expect(seen.deleted.size).toBeGreaterThanOrEqual(10);
    expect(seen.sharedAddresses).toEqual([]);

    // Every pod ends Running with its lease's addresses (the kubelet's retries were enough).
    const pods = await waitForValue(
      podsOfApp,
      (ps) => ps.length === REPLICAS && ps.every((p) => live(p) && p.status?.phase === 'Running'),
      300_000,
      1000,
      `${REPLICAS} pods of ${app} Running after the upgrade`,
    );
    for (const pod of pods) {
      const lease = await waitForValue(
        () => leaseOfPod(real.temporal, uidOf(pod)),
        (s) => s?.phase === 'Running',
        60_000,
      );
      expect([...(pod.status?.podIPs ?? []).map((i) => i.ip)].sort()).toEqual(addressesOf(lease).sort());
    }
    // No DEL lost: each deleted pod's lease is Released, and the queues are empty.
    for (const uid of seen.deleted) {
      const lease = await waitForValue(
        () => leaseOfPod(real.temporal, uid),
        (s) => s === undefined || s.phase === 'Released',
        120_000,
        500,
        `the lease of deleted pod ${uid} Released`,
      );
      expect([uid, lease?.phase ?? 'none']).toEqual([uid, lease === undefined ? 'none' : 'Released']);
    }
    expect(
      await waitForValue(queuedDelsDescribed, (q) => q.length === 0, 60_000, 1000, 'the DEL queues empty'),
    ).toEqual([]);
    // The nodes' tables hold exactly the live pods' addresses, none twice; host ends are the pods'.
    const states = await Promise.all(
      nodeNames.map(async (node) => ({
        node,
        ...(await real.temporal.client.workflow.getHandle(nodeWorkflowId(node)).query(nodeStateQuery)),
      })),
    );
    expect(addressOwnershipFindings(states).map((f) => f.message)).toEqual([]);
    const held = states.flatMap((s) =>
      Object.values(s.tables[real.temporal.taskQueue]?.allocations ?? {}).map((a) => a.address),
    );
    expect(held.sort()).toEqual(pods.flatMap((p) => (p.status?.podIPs ?? []).map((i) => i.ip)).sort());
    for (const node of real.nodes) {
      const ends = hostEnds(await ipJson(node.hostNetns, ['link', 'show'], LinkSchema));
      const onNode = pods.filter((p) => p.spec?.nodeName === node.real.nodeName).length;
      expect([node.real.nodeName, ends.length]).toEqual([node.real.nodeName, onNode]);
    }
  },
  900_000,
);

inCluster(
  'helm uninstall removes the conflist and the shim from both nodes and leaves no netlease process',
  async () => {
    const installed = real.installed;
    if (!installed) throw new Error('netlease is not installed as pods');
    const hosts = hostDirsOf(real.dir);
    const files = () =>
      nodeNames.flatMap((node) => [
        join(hosts.cniConf, node, '10-netlease.conflist'),
        join(hosts.cniBin, node, 'netlease'),
      ]);
    expect(files().filter(existsSync)).toEqual(files());
    expect(netleaseProcesses().length).toBeGreaterThan(0);
    await installed.uninstall();
    expect(files().filter(existsSync)).toEqual([]);
    // The runtime's own plugin stays: only netlease's files go.
    for (const node of nodeNames) expect(existsSync(join(hosts.cniBin, node, 'loopback'))).toBe(true);
    expect(
      await waitForValue(
        async () => netleaseProcesses(),
        (p) => p.length === 0,
        60_000,
      ),
    ).toEqual([]);
  },
  300_000,
);

inCluster('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(real.temporal, 10);
});
