// whereabouts keeps its pools in custom resources: its CRDs, read from the downloaded module's
// doc/crds/, are created in the bench's kube-apiserver and waited on until Established.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1CustomResourceDefinition } from '@kubernetes/client-node' with {
  'resolution-mode': 'import',
};
import { parseAllDocuments } from 'yaml';
import type { KubeClients } from '../../kubernetes/kube';
import { waitFor } from '../../tools/processes';
import { programModuleDir } from '../../tools/programs';

function crdsIn(dir: string): V1CustomResourceDefinition[] {
  return readdirSync(dir)
    .filter((file) => /\.ya?ml$/.test(file))
    .flatMap((file) =>
      parseAllDocuments(readFileSync(join(dir, file), 'utf8')).map((d) => d.toJS() as unknown),
    )
    .filter((doc): doc is V1CustomResourceDefinition => {
      return (doc as { kind?: unknown } | null)?.kind === 'CustomResourceDefinition';
    });
}

export async function applyWhereaboutsCrds({ kube, config }: KubeClients): Promise<void> {
  const api = config.makeApiClient(kube.ApiextensionsV1Api);
  const crds = crdsIn(join(programModuleDir('whereabouts'), 'doc', 'crds'));
  if (crds.length === 0) throw new Error('no CustomResourceDefinition in whereabouts doc/crds');
  for (const body of crds) await api.createCustomResourceDefinition({ body });
  const established = async (name: string) => {
    const crd = await api.readCustomResourceDefinition({ name });
    return (crd.status?.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True');
  };
  for (const crd of crds) {
    const name = crd.metadata?.name ?? '';
    if (!(await waitFor(() => established(name), 30000, 200)))
      throw new Error(`CRD ${name} not Established within 30 s`);
  }
}
