// netlease installed as pods on the local cluster, the way an operator installs a CNI: the image
// (tools/netlease-image) is in each node's containerd, and `helm upgrade --install` of the chart
// (deploy/helm/netlease) with values only: the agent DaemonSet on both nodes, its install-cni init
// container writing the shim and the conflist into each node's CNI dirs, the control Deployment of
// 2 replicas, Temporal outside the cluster. What differs from a real cluster is in the values: the
// nodes share one machine, so each node's host directories are its own subdirectory
// (hostPaths.perNode), its veth host ends go to its own host namespace (`<prefix><node name>`), the
// workers' metrics listen on the node's address, and the API server is reached directly (there is
// no kube-proxy).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { z } from 'zod';
import type { PoolSpecSchema, TemporalConnectionSchema } from '../domain/config';
import { connectKube, isConflict, isNotFound, kubeCall } from '../kubernetes/kube';
import { hostDirsOf, waitNodesReady, type LocalCluster } from './cluster';
import type { NetleaseImage } from './netlease-image';
import { freePort, waitFor } from './processes';
import { CHART, helm } from './render-manifests';

export const RELEASE = 'netlease';
export const RELEASE_NAMESPACE = 'netlease-system';
/** The values of the last install or upgrade, in the cluster's directory. */
export const VALUES_FILE = 'netlease-values.json';

export interface InClusterOptions {
  cluster: LocalCluster;
  /** The cluster's directory (its host directories are under it). */
  dir: string;
  image: NetleaseImage;
  temporal: z.input<typeof TemporalConnectionSchema>;
  pool: { name: string; cidrs: string[] };
  /** Pools served besides `pool` (say, with selectors); the network config names `pool`. */
  morePools?: Array<z.input<typeof PoolSpecSchema>>;
  /** Each node's host namespace is `<hostNetnsPrefix><node name>` (the caller makes them). */
  hostNetnsPrefix: string;
  network?: string;
  preProduce?: boolean;
  /**
   * Temporal over TLS: the server's CA and, for mTLS, the client's certificate and key (PEM files),
   * put in a Secret of the release's namespace that the chart mounts in both workers.
   */
  tls?: { ca: string; cert?: string; key?: string; serverName?: string };
  reconcileIntervalSeconds?: number;
  log: (line: string) => void;
}

export interface InCluster {
  /** The values the chart was last installed or upgraded with. */
  readonly values: ChartValues;
  /** `helm upgrade` with these values changed (the image, say): the chart's rolling update. */
  upgrade(change: (values: ChartValues) => ChartValues): Promise<void>;
  /** `helm uninstall --wait`: netlease's objects and pods gone. */
  uninstall(): Promise<void>;
}

export type ChartValues = Record<string, unknown> & {
  image: { repository: string; tag: string; pullPolicy?: string };
};

/** The chart's values for the local cluster. */
export async function inClusterValues(options: InClusterOptions): Promise<ChartValues> {
  const server = new URL(options.cluster.kube.server);
  const temporal = options.temporal;
  return {
    image: { repository: options.image.ref.split(':')[0] ?? '', tag: options.image.tag, pullPolicy: 'Never' },
    temporal: {
      address: temporal.address,
      namespace: temporal.namespace ?? 'default',
      taskQueue: temporal.taskQueue ?? 'netlease-control',
      ...(options.tls
        ? {
            tls: {
              enabled: true,
              secretName: TLS_SECRET,
              clientCertificate: options.tls.cert !== undefined,
              serverNameOverride: options.tls.serverName ?? '',
            },
          }
        : {}),
    },
    pools: [{ name: options.pool.name, cidrs: options.pool.cidrs }, ...(options.morePools ?? [])],
    // containerd 1.6's libcni knows CNI versions up to 1.0.0.
    network: {
      name: options.network ?? 'netlease',
      mode: 'ptp',
      pool: options.pool.name,
      cniVersion: '1.0.0',
    },
    kubernetesApi: { host: server.hostname, port: server.port },
    control: {
      // One per node (host network, anti-affinity): a one-node cluster runs one.
      replicas: Math.min(2, options.cluster.nodes.length),
      reuseCooldownSeconds: 1,
      reconcileIntervalSeconds: options.reconcileIntervalSeconds ?? 3600,
      metrics: { enabled: true, port: await freePort(), host: '$(NETLEASE_POD_IP)' },
    },
    nodeAgent: {
      preProduce: options.preProduce ?? true,
      hostNetns: `${options.hostNetnsPrefix}$(NETLEASE_NODE_NAME)`,
      metrics: { enabled: true, port: await freePort(), host: '$(NETLEASE_POD_IP)' },
    },
    hostPaths: { ...hostDirsOf(options.dir), netns: '/run/netns', perNode: true },
  };
}

/** `helm upgrade --install` with `values`, waiting for the workloads to be ready. */
function helmApply(options: InClusterOptions, values: ChartValues): void {
  const file = join(options.dir, VALUES_FILE);
  writeFileSync(file, JSON.stringify(values, null, 2));
  const kubeconfig = ['--kubeconfig', options.cluster.kubeconfig];
  options.log(
    `helm upgrade --install ${RELEASE} deploy/helm/netlease -f ${file} (image ${values.image.tag})`,
  );
  const out = helm([
    'upgrade',
    '--install',
    RELEASE,
    CHART,
    '--namespace',
    RELEASE_NAMESPACE,
    '--create-namespace',
    '-f',
    file,
    '--wait',
    '--timeout',
    '5m',
    ...kubeconfig,
  ]);
  options.log(out.trim());
}

/** The Secret the chart's temporal.tls.secretName names: ca.crt, and tls.crt/tls.key for mTLS. */
export const TLS_SECRET = 'netlease-temporal-tls';

/** The release's namespace and the TLS Secret in it (replaced when it exists), before the install. */
async function putTlsSecret(kubeconfig: string, tls: NonNullable<InClusterOptions['tls']>): Promise<void> {
  const { core } = await connectKube(kubeconfig);
  const namespace = RELEASE_NAMESPACE;
  await core.createNamespace({ body: { metadata: { name: namespace } } }).catch((err: unknown) => {
    if (!isConflict(err)) throw err;
  });
  const pem = (file: string) => Buffer.from(readFileSync(file)).toString('base64');
  const data = {
    'ca.crt': pem(tls.ca),
    ...(tls.cert && tls.key ? { 'tls.crt': pem(tls.cert), 'tls.key': pem(tls.key) } : {}),
  };
  const body = { metadata: { name: TLS_SECRET, namespace }, type: 'Opaque', data };
  await core.deleteNamespacedSecret({ namespace, name: TLS_SECRET }).catch((err: unknown) => {
    if (!isNotFound(err)) throw err;
  });
  await core.createNamespacedSecret({ namespace, body });
}

/** Installs netlease with the chart and waits until both nodes are Ready through it. */
export async function installInCluster(options: InClusterOptions): Promise<InCluster> {
  let values = await inClusterValues(options);
  if (options.tls) await putTlsSecret(options.cluster.kubeconfig, options.tls);
  helmApply(options, values);
  await waitNodesReady(options.cluster);
  return {
    get values() {
      return values;
    },
    async upgrade(change) {
      values = change(structuredClone(values));
      helmApply(options, values);
    },
    async uninstall() {
      options.log(`helm uninstall ${RELEASE} --wait`);
      const args = ['uninstall', RELEASE, '--namespace', RELEASE_NAMESPACE, '--wait', '--timeout', '3m'];
      options.log(helm([...args, '--kubeconfig', options.cluster.kubeconfig]).trim());
      await untilNoPods(options.cluster.kubeconfig);
    },
  };
}

/** Until the release namespace has no pod left (helm's --wait covers the objects, not their pods). */
async function untilNoPods(kubeconfig: string): Promise<void> {
  const { core, timeouts } = await connectKube(kubeconfig);
  const ms = timeouts.callSeconds * 1000;
  const gone = await waitFor(
    async () =>
      (
        await kubeCall('listing netlease pods', ms, (o) =>
          core.listNamespacedPod({ namespace: RELEASE_NAMESPACE }, o),
        )
      ).items.length === 0,
    120_000,
    500,
  );
  if (!gone) throw new Error(`netlease's pods in ${RELEASE_NAMESPACE} did not go within 120 s`);
}
