// The manifests under deploy/ apply to a real kube-apiserver the way an operator applies them (see
// test/harness/manifests for the order), server-side, from an empty cluster, and again with no
// change; each service account gets what its worker needs and no more. There is no kubectl here,
// so the client applies them. No controller-manager runs: workloads are stored, no pods start.
import type {
  KubernetesObject,
  KubernetesObjectApi,
  V1DaemonSet,
  V1Deployment,
} from '@kubernetes/client-node' with {
  'resolution-mode': 'import',
};
import { dirname } from 'node:path';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { z } from 'zod';
import { DEFAULT_OFFER_DIR, NodeAgentConfigSchema } from '../../domain/config';
import { DEFAULT_CONFLIST, preProduceMismatch } from '../../domain/conflist';
import { connectKube, isNotFound, type KubeClients } from '../../kubernetes/kube';
import { waitFor } from '../../tools/processes';
import { conflist, DEFAULTS, NetworkSchema } from '../../worker/agent/install-cni';
import { CONTROL_WORKER_NODE_FLAGS, NODE_AGENT_NODE_FLAGS, PROCESS_ENV } from '../../worker/process-flags';
import { kubeconfigPath } from '../harness/kube';
import { describeObject, readManifests, type Document } from '../harness/manifests';

const FIELD_MANAGER = 'netlease-test';
const docs = readManifests();
let clients: KubeClients;
let api: KubernetesObjectApi;

beforeAll(async () => {
  clients = await connectKube(kubeconfigPath());
  api = clients.kube.KubernetesObjectApi.makeApiClient(clients.config);
});
afterAll(() => removeAll());

const header = ({ object }: Document) => ({
  apiVersion: object.apiVersion,
  kind: object.kind,
  metadata: { name: object.metadata.name, namespace: object.metadata.namespace },
});

async function applyAll(): Promise<KubernetesObject[]> {
  const applied: KubernetesObject[] = [];
  for (const doc of docs) {
    const { PatchStrategy, loadYaml } = clients.kube;
    // Through the client's loader, as its models name fields: its serializer drops a plain object's
    // `default`, `enum` and `x-kubernetes-validations` (a CRD applied without its CEL rules).
    const object = loadYaml<KubernetesObject>(stringifyYaml(doc.object));
    const result = await api
      .patch(object, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply)
      .catch((err: unknown) => {
        throw new Error(`${doc.source} (${describeObject(doc)}): ${(err as Error).message}`);
      });
    applied.push(result);
  }
  return applied;
}

/**
 * A CustomResourceDefinition stays, as `helm uninstall` keeps it (deleting it deletes every pool),
 * and other test files of the run use it.
 */
const removable = (doc: Document) => doc.object.kind !== 'CustomResourceDefinition';

/** What the namespace controller would do: empty each namespace, then finalize it. */
async function removeAll(): Promise<void> {
  const gone = (err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err));
  for (const doc of [...docs].reverse().filter(removable)) {
    if (doc.object.kind !== 'Namespace') await api.delete(header(doc)).catch(gone);
  }
  for (const { object } of docs.filter((d) => d.object.kind === 'Namespace')) {
    const name = object.metadata.name;
    await clients.core.deleteNamespace({ name }).catch(gone);
    const body = { metadata: { name }, spec: { finalizers: [] } };
    await clients.core.replaceNamespaceFinalize({ name, body }).catch(gone);
  }
}

const exists = (doc: Document) =>
  api.read(header(doc)).then(
    () => true,
    (err: unknown) => (isNotFound(err) ? false : Promise.reject(err)),
  );

test('the manifests are found, and every namespace they use comes from a shared file', () => {
  expect(docs.map((d) => d.object.kind)).toEqual(expect.arrayContaining(['DaemonSet', 'Deployment']));
  const shared = docs.filter((d) => d.dir === '.' && d.object.kind === 'Namespace');
  const used = new Set(
    docs.flatMap((d) => (d.object.metadata.namespace ? [d.object.metadata.namespace] : [])),
  );
  expect([...used].filter((ns) => !shared.some((d) => d.object.metadata.name === ns))).toEqual([]);
});

test('they apply server-side in kubectl order, and a second apply changes nothing', async () => {
  const first = await applyAll();
  for (const doc of docs)
    expect({ doc: doc.source, exists: await exists(doc) }).toEqual({ doc: doc.source, exists: true });
  const second = await applyAll();
  // A CRD's status (NamesAccepted, Established) is written by the API server after the apply: its
  // spec's generation says whether an apply changed it.
  const version = (o: KubernetesObject) =>
    o.kind === 'CustomResourceDefinition'
      ? `generation ${o.metadata?.generation}`
      : o.metadata?.resourceVersion;
  const versions = (objects: KubernetesObject[]) =>
    objects.map((o, i) => `${docs[i]?.source}: ${o.metadata?.uid} @ ${version(o)}`);
  expect(versions(second)).toEqual(versions(first));
});

const read = (resource: string) => ['get', 'list', 'watch'].map((verb) => `${verb} ${resource}`);
/** What each workload's service account must be allowed; everything in NEVER it must not be. */
const NEEDS: Record<string, string[]> = {
  'Deployment/netlease-control': [
    ...read('pods'),
    ...read('nodes'),
    'get pods/status',
    'get apps/statefulsets', // a deleted StatefulSet's sticky reservations end
    ...['get', 'create', 'update'].map((verb) => `${verb} coordination.k8s.io/leases`),
    ...read('netlease.io/netleasepools'),
    'patch netlease.io/netleasepools/status',
  ],
  // Its own DaemonSet, read by uninstall-cni (the agent's preStop) to tell an uninstall from a restart.
  'DaemonSet/netlease-node-agent': [
    ...read('pods'),
    ...read('nodes'),
    'get apps/daemonsets@netlease-node-agent',
  ],
};
const NEVER = [
  'delete coordination.k8s.io/leases',
  'create pods',
  'delete pods',
  'patch pods/status',
  'update nodes',
  'get secrets',
  'list configmaps',
  'list apps/daemonsets',
  'update apps/daemonsets',
  'list apps/statefulsets',
  'update apps/statefulsets',
  'update netlease.io/netleasepools', // the spec is the operator's
  'delete netlease.io/netleasepools',
];

const PodTemplateSchema = z.object({
  spec: z.object({ template: z.object({ spec: z.object({ serviceAccountName: z.string().optional() }) }) }),
});

test('each workload runs as its own service account, allowed what it needs and no more', async () => {
  const workloads = docs.filter((d) => ['Deployment', 'DaemonSet'].includes(d.object.kind));
  expect(workloads.map((d) => `${d.object.kind}/${d.object.metadata.name}`).sort()).toEqual(
    Object.keys(NEEDS).sort(),
  );
  const authz = clients.config.makeApiClient(clients.kube.AuthorizationV1Api);
  for (const workload of workloads) {
    const namespace = workload.object.metadata.namespace ?? 'default';
    const account = PodTemplateSchema.parse(workload.object).spec.template.spec.serviceAccountName;
    const declared = docs.some(
      (d) =>
        d.object.kind === 'ServiceAccount' &&
        d.object.metadata.name === account &&
        d.object.metadata.namespace === namespace,
    );
    expect({ workload: workload.source, account, declared }).toEqual({
      workload: workload.source,
      account,
      declared: true,
    });
    const can = async (access: string) => {
      // `verb resource[/subresource]` in the core group, `verb group/resource[/subresource]` in
      // another; `@name`: one object.
      const [verb, access_ = ''] = access.split(' ');
      const [path = '', name] = access_.split('@');
      const [first = '', second, third] = path.split('/');
      const grouped = first.includes('.') || first === 'apps';
      const [group, resource, subresource] = grouped ? [first, second, third] : ['', first, second];
      const review = await authz.createSubjectAccessReview({
        body: {
          spec: {
            user: `system:serviceaccount:${namespace}:${account}`,
            groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
            resourceAttributes: { verb, group, resource, subresource, name, namespace },
          },
        },
      });
      return review.status?.allowed === true;
    };
    const needs = NEEDS[`${workload.object.kind}/${workload.object.metadata.name}`] ?? [];
    const missing = async () =>
      (await Promise.all(needs.map(async (a) => ((await can(a)) ? [] : [a])))).flat();
    // The RBAC authorizer sees new bindings through its informers: wait for them, then check denials.
    await waitFor(async () => (await missing()).length === 0, 10_000, 100);
    const extra = (await Promise.all(NEVER.map(async (a) => ((await can(a)) ? [a] : [])))).flat();
    expect({ workload: workload.source, missing: await missing(), extra }).toEqual({
      workload: workload.source,
      missing: [],
      extra: [],
    });
  }
});

/** mountPath → "hostPath (type)" for one container's hostPath mounts. */
function hostMounts(ds: V1DaemonSet, container: string): Record<string, string> {
  const pod = ds.spec?.template.spec;
  const found = [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])].find(
    (c) => c.name === container,
  );
  return Object.fromEntries(
    (found?.volumeMounts ?? []).flatMap((m) => {
      const host = pod?.volumes?.find((v) => v.name === m.name)?.hostPath;
      return host ? [[m.mountPath, `${host.path} (${host.type ?? ''})`]] : [];
    }),
  );
}

test('the node agent DaemonSet installs the CNI files and shares the socket and queue dirs', async () => {
  const doc = docs.find((d) => d.object.kind === 'DaemonSet');
  const apps = clients.config.makeApiClient(clients.kube.AppsV1Api);
  const ds = await apps.readNamespacedDaemonSet({
    name: doc?.object.metadata.name ?? '',
    namespace: doc?.object.metadata.namespace ?? '',
  });
  const init = ds.spec?.template.spec?.initContainers?.find((c) => c.name === 'install-cni');
  // The conflist names the host's paths of the agent's socket and DEL queue: those it mounts.
  expect(init?.command).toEqual([
    'node',
    'dist/worker/agent/install-cni.js',
    '--config',
    '/etc/netlease/install-cni.yaml',
    '--agent-socket',
    DEFAULTS.agentSocket,
    '--delete-queue',
    DEFAULTS.deleteQueue,
  ]);
  const config = docs.find((d) => d.object.kind === 'ConfigMap' && d.dir === doc?.dir)?.object;
  const files = z.object({ data: z.record(z.string(), z.string()) }).parse(config).data;
  const network = z
    .object({ network: NetworkSchema })
    .strict()
    .parse(parseYaml(files['install-cni.yaml'] ?? ''));
  expect(network.network).toMatchObject({ mode: 'ptp', pool: 'default' });
  // install-cni's defaults are the mount points: the manifest passes no directory flags.
  expect(hostMounts(ds, 'install-cni')).toEqual({
    [DEFAULTS.binDir]: '/opt/cni/bin (DirectoryOrCreate)',
    [DEFAULTS.confDir]: '/etc/cni/net.d (DirectoryOrCreate)',
  });
  expect(hostMounts(ds, 'node-agent')).toMatchObject({
    [dirname(DEFAULTS.agentSocket)]: `${dirname(DEFAULTS.agentSocket)} (DirectoryOrCreate)`,
    [dirname(DEFAULTS.deleteQueue)]: `${dirname(DEFAULTS.deleteQueue)} (DirectoryOrCreate)`,
    [dirname(DEFAULT_OFFER_DIR)]: `${dirname(DEFAULT_OFFER_DIR)} (DirectoryOrCreate)`,
    [dirname(DEFAULT_CONFLIST)]: '/etc/cni/net.d (DirectoryOrCreate)', // compared with preProduce
    [DEFAULTS.binDir]: '/opt/cni/bin (DirectoryOrCreate)', // uninstall-cni removes the shim
  });
  // The agent's preProduce asks for what ADDs through install-cni's conflist carry.
  const agentConfig = NodeAgentConfigSchema.parse(parseYaml(files['node-agent.yaml'] ?? ''));
  const preProduce = agentConfig.preProduce as NonNullable<typeof agentConfig.preProduce>;
  expect(preProduceMismatch(preProduce, conflist(network.network), 'install-cni.yaml')).toBeUndefined();
  const agent = ds.spec?.template.spec?.containers.find((c) => c.name === 'node-agent');
  expect(agent?.command).toEqual([
    'node',
    ...NODE_AGENT_NODE_FLAGS,
    'dist/worker/agent/node-agent.js',
    '--config',
    '/etc/netlease/node-agent.yaml',
  ]);
  expect(agent?.env).toEqual(expect.arrayContaining(envOf(PROCESS_ENV)));
});

const envOf = (env: Record<string, string>) => Object.entries(env).map(([name, value]) => ({ name, value }));

test('the control worker runs with the same V8 flags as npm start', () => {
  const deployment = docs.find((d) => d.object.kind === 'Deployment')?.object as V1Deployment | undefined;
  const command = deployment?.spec?.template.spec?.containers[0]?.command;
  expect(command?.slice(0, CONTROL_WORKER_NODE_FLAGS.length + 2)).toEqual([
    'node',
    ...CONTROL_WORKER_NODE_FLAGS,
    'dist/worker/control/control.js',
  ]);
  expect(deployment?.spec?.template.spec?.containers[0]?.env).toEqual(
    expect.arrayContaining(envOf(PROCESS_ENV)),
  );
});

test('removing what was applied leaves none of it (but the CRD)', async () => {
  await removeAll();
  const left = async () =>
    (
      await Promise.all(docs.filter(removable).map(async (d) => ((await exists(d)) ? [d.source] : [])))
    ).flat();
  expect(await waitFor(async () => (await left()).length === 0, 10_000, 100)).toBe(true);
});
