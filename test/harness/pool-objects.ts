// NetleasePool objects in the test cluster: the CRD as deploy/ has it (the chart's rendering),
// applied server-side (idempotent: test files share the API server), then objects created, changed
// and read through the API as an operator's kubectl would.
import type { KubernetesObject } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import {
  POOL_GROUP,
  POOL_PLURAL,
  POOL_VERSION,
  POOLS_PATH,
  PoolObjectSchema,
  type PoolObject,
} from '../../domain/pool-object';
import { isNotFound, type KubeClients } from '../../kubernetes/kube';
import { waitForValue } from './wait';

export const CRD_FILE = join(__dirname, '..', '..', '..', 'deploy', '01-crd-netleasepool.yaml');
const CrdSchema = z.looseObject({ metadata: z.looseObject({ name: z.string() }) });

const established = (crd: unknown) =>
  z
    .object({ status: z.object({ conditions: z.array(z.object({ type: z.string(), status: z.string() })) }) })
    .safeParse(crd)
    .data?.status.conditions.some((c) => c.type === 'Established' && c.status === 'True') ?? false;

/** Applies the CRD of deploy/ and waits until the API serves it. */
export async function installPoolCrd(clients: KubeClients): Promise<void> {
  // The client's own loader: it knows the model's field names (`default`, `enum`,
  // `x-kubernetes-validations`), which the serializer drops from a plain parse.
  const text = readFileSync(CRD_FILE, 'utf8');
  const crd = clients.kube.loadYaml<KubernetesObject>(text);
  const { name } = CrdSchema.parse(parseYaml(text)).metadata;
  const objects = clients.kube.KubernetesObjectApi.makeApiClient(clients.config);
  const { PatchStrategy } = clients.kube;
  await objects.patch(crd, undefined, undefined, 'netlease-test', true, PatchStrategy.ServerSideApply);
  const api = clients.config.makeApiClient(clients.kube.ApiextensionsV1Api);
  await waitForValue(() => api.readCustomResourceDefinition({ name }), established, 30_000);
}

export interface PoolObjectsApi {
  create(name: string, spec: Record<string, unknown>): Promise<PoolObject>;
  read(name: string): Promise<PoolObject>;
  /** A merge patch of the spec, as `kubectl patch --type merge` or an edit. */
  patchSpec(name: string, spec: Record<string, unknown>): Promise<PoolObject>;
  delete(name: string): Promise<void>;
  /** GET of the object as a meta.k8s.io Table: what `kubectl get netleasepools` prints. */
  table(name: string): Promise<{ columns: string[]; cells: unknown[] }>;
}

const TableSchema = z.object({
  columnDefinitions: z.array(z.object({ name: z.string() })),
  rows: z.array(z.object({ cells: z.array(z.unknown()) })),
});

export function poolObjects(clients: KubeClients): PoolObjectsApi {
  const api = clients.config.makeApiClient(clients.kube.CustomObjectsApi);
  const at = { group: POOL_GROUP, version: POOL_VERSION, plural: POOL_PLURAL };
  const mergePatch = clients.kube.setHeaderOptions('Content-Type', clients.kube.PatchStrategy.MergePatch);
  const body = (name: string, spec: Record<string, unknown>) => ({
    apiVersion: `${POOL_GROUP}/${POOL_VERSION}`,
    kind: 'NetleasePool',
    metadata: { name },
    spec,
  });
  return {
    async create(name, spec) {
      return PoolObjectSchema.parse(await api.createClusterCustomObject({ ...at, body: body(name, spec) }));
    },
    async read(name) {
      return PoolObjectSchema.parse(await api.getClusterCustomObject({ ...at, name }));
    },
    async patchSpec(name, spec) {
      const patched: unknown = await api.patchClusterCustomObject(
        { ...at, name, body: { spec } },
        mergePatch,
      );
      return PoolObjectSchema.parse(patched);
    },
    async delete(name) {
      await api.deleteClusterCustomObject({ ...at, name }).catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
    },
    async table(name) {
      const cluster = clients.config.getCurrentCluster();
      if (!cluster) throw new Error('no cluster in the test kubeconfig');
      const init = await clients.config.applyToFetchOptions({
        headers: { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
      });
      const { default: fetch } = await import('node-fetch');
      const response = await fetch(`${cluster.server}${POOLS_PATH}/${name}`, init);
      const table = TableSchema.parse(await response.json());
      return { columns: table.columnDefinitions.map((c) => c.name), cells: table.rows[0]?.cells ?? [] };
    },
  };
}
