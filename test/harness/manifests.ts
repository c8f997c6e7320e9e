// The cluster manifests under deploy/, read in the order `kubectl apply -f` takes them:
// `kubectl apply -f deploy/00-namespace.yaml -f deploy/01-crd-netleasepool.yaml -f deploy/control/
// -f deploy/node-agent/` visits the arguments in turn, each directory's files in lexical order,
// each file's documents in order.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';

export const DEPLOY = join(__dirname, '..', '..', '..', 'deploy');
/** Shared files at the top of deploy/ first, then each component (deploy/dev is for `npm start`). */
export const COMPONENTS = ['control', 'node-agent'];

export const ManifestSchema = z.looseObject({
  apiVersion: z.string().min(1),
  kind: z.string().min(1),
  metadata: z.looseObject({ name: z.string().min(1), namespace: z.string().min(1).optional() }),
});
export type Manifest = z.infer<typeof ManifestSchema>;

export interface Document {
  /** `control/rbac.yaml#1`: file under deploy/ and the document's index in it. */
  source: string;
  /** `.` for a shared file, else the component's directory. */
  dir: string;
  object: Manifest;
}

const yamlFiles = (dir: string) =>
  readdirSync(join(DEPLOY, dir))
    .filter((f) => /\.(ya?ml|json)$/.test(f) && statSync(join(DEPLOY, dir, f)).isFile())
    .sort();

export function readManifests(): Document[] {
  return ['.', ...COMPONENTS].flatMap((dir) =>
    yamlFiles(dir).flatMap((file) => {
      const path = dir === '.' ? file : `${dir}/${file}`;
      return parseAllDocuments(readFileSync(join(DEPLOY, path), 'utf8'))
        .map((doc, i) => {
          if (doc.errors.length) throw new Error(`${path}#${i}: ${doc.errors[0]?.message}`);
          return { source: `${path}#${i}`, value: doc.toJS() as unknown };
        })
        .filter(({ value }) => value !== null) // an empty document, as after a trailing `---`
        .map(({ source, value }) => {
          const parsed = ManifestSchema.safeParse(value);
          if (!parsed.success) throw new Error(`${source}: not a Kubernetes object: ${parsed.error.message}`);
          return { source, dir, object: parsed.data };
        });
    }),
  );
}

export const describeObject = ({ object }: Document): string =>
  `${object.kind} ${object.metadata.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata.name}`;
