// The plain manifests for those without Helm, rendered from the chart (deploy/helm/netlease) with
// its default values: `helm template` split by template file into deploy/00-namespace.yaml,
// deploy/01-crd-<name>.yaml (the CustomResourceDefinitions), deploy/control/<name>.yaml and deploy/node-agent/<name>.yaml. test/integration/helm-chart checks
// that the files under deploy/ are exactly this rendering, so the chart is the one source.
// Usage: node dist/tools/render-manifests.js [--check]   (--check: exit 1 naming the files that differ)
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { programPath } from './programs';

const ROOT = join(__dirname, '..', '..');
export const CHART = join(ROOT, 'deploy', 'helm', 'netlease');
export const DEPLOY = join(ROOT, 'deploy');
/** The release the plain manifests are: the chart's defaults, with its Namespace object. */
export const PLAIN_RELEASE = ['netlease', '--namespace', 'netlease-system', '--set', 'namespace.create=true'];

const HEADER =
  '# Rendered from deploy/helm/netlease with its default values by tools/render-manifests.ts: edit\n' +
  '# the chart (or its values), then `node dist/tools/render-manifests.js`.\n';

/** `helm <args>`: its stdout; throws with its stderr. */
export function helm(args: string[]): string {
  const result = spawnSync(programPath('helm'), args, { encoding: 'utf8' });
  if (result.status !== 0)
    throw new Error(`helm ${args.join(' ')}: ${result.stderr.trim() || result.status}`);
  return result.stdout;
}

/** deploy/'s path of a template: namespace.yaml first, then each component's directory. */
function plainPath(template: string): string {
  if (template === 'namespace.yaml') return '00-namespace.yaml';
  if (template.startsWith('crd-')) return `01-${template}`; // cluster-wide, before the components
  const component = ['control', 'node-agent'].find((c) => template.startsWith(`${c}-`));
  if (!component) throw new Error(`templates/${template} belongs to no component of deploy/`);
  return `${component}/${template.slice(component.length + 1)}`;
}

/** deploy/-relative path → content, from `helm template` of the chart's defaults, as Prettier lays it out. */
export async function renderPlainManifests(): Promise<Map<string, string>> {
  const rendered = helm(['template', ...PLAIN_RELEASE, CHART]);
  const files = new Map<string, string[]>();
  for (const doc of rendered.split(/^---\n/m)) {
    const source = /^# Source: netlease\/templates\/(\S+)\n/.exec(doc);
    if (!source?.[1]) continue;
    const path = plainPath(source[1]);
    files.set(path, [...(files.get(path) ?? []), doc.slice(source[0].length).trimEnd()]);
  }
  const { format, resolveConfig } = await import('prettier');
  const formatted = [...files].map(async ([path, docs]) => {
    const filepath = join(DEPLOY, path);
    const options = { ...(await resolveConfig(filepath)), filepath };
    return [path, await format(`${HEADER}${docs.join('\n---\n')}\n`, options)] as const;
  });
  return new Map(await Promise.all(formatted));
}

/** The files under deploy/ that are not the rendering (missing or different). */
export async function staleManifests(): Promise<string[]> {
  return [...(await renderPlainManifests())]
    .filter(
      ([path, text]) => !existsSync(join(DEPLOY, path)) || readFileSync(join(DEPLOY, path), 'utf8') !== text,
    )
    .map(([path]) => `deploy/${path}`);
}

async function main(): Promise<void> {
  if (process.argv.includes('--check')) {
    const stale = await staleManifests();
    if (stale.length) {
      console.error(`not the chart's rendering: ${stale.join(', ')}`);
      process.exitCode = 1;
    }
  } else for (const [path, text] of await renderPlainManifests()) writeFileSync(join(DEPLOY, path), text);
}

if (require.main === module) void main();
