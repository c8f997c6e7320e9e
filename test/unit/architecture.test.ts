// The layout holds: no import circles (type-only imports included, since they tie modules
// together just the same), and each folder imports only the layers below it.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

const root = join(__dirname, '..', '..', '..');
const FOLDERS = [
  'domain',
  'workflows',
  'activities',
  'kernel',
  'kubernetes',
  'temporal',
  'worker',
  'cni',
  'observability',
  'storage',
  'tools',
  'cli',
];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** module (path without .ts, relative to the root) → the project modules it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of FOLDERS.flatMap((f) => sources(join(root, f)))) {
    const text = readFileSync(file, 'utf8');
    const specs = [...text.matchAll(/(?:from|import\()\s*'(\.[^']+)'/g)].map((m) => m[1] ?? '');
    const module = relative(root, file).replace(/\.ts$/, '');
    graph.set(
      module,
      specs.map((spec) => normalize(join(dirname(module), spec))),
    );
  }
  return graph;
}

function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return found;
}

const graph = importGraph();

test('the import graph reads every source folder', () => {
  for (const folder of FOLDERS) expect([...graph.keys()].some((m) => m.startsWith(`${folder}/`))).toBe(true);
  expect(graph.size).toBeGreaterThan(50);
});

test('no import circles', () => {
  expect(cycles(graph).map((c) => c.join(' → '))).toEqual([]);
});

test('the cycle finder finds a circle', () => {
  const circular = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
  ]);
  expect(cycles(circular)).toEqual([['a', 'b', 'c', 'a']]);
});

const allBut = (...kept: string[]): string[] => FOLDERS.filter((folder) => !kept.includes(folder));

/** What each folder must not import. */
const FORBIDDEN: Record<string, string[]> = {
  domain: allBut('domain', 'storage', 'cli'),
  workflows: ['kernel', 'kubernetes', 'temporal', 'worker', 'cni', 'observability', 'tools'],
  kernel: ['workflows', 'activities', 'kubernetes', 'temporal', 'worker', 'cni', 'tools'],
  kubernetes: ['workflows', 'activities', 'kernel', 'temporal', 'worker', 'cni', 'tools'],
  temporal: ['activities', 'kernel', 'kubernetes', 'worker', 'cni', 'tools'],
  activities: ['worker', 'cni', 'tools'],
  cni: ['activities', 'worker', 'tools'],
  observability: ['workflows', 'activities', 'kernel', 'kubernetes', 'temporal', 'worker', 'cni', 'tools'],
  // Durable files on the node: below everything that uses them.
  storage: allBut('storage'),
  // The operator's CLI reads through temporal/ and kubernetes/; of worker/ only the config loader.
  cli: ['workflows', 'activities', 'kernel', 'worker', 'cni', 'tools'],
};

/** Modules of a forbidden layer a folder may import all the same. */
const EXCEPTIONS: Record<string, RegExp> = {
  cli: /^(workflows\/[a-z-]+-messages|worker\/config-file)$/,
};

test.each(Object.entries(FORBIDDEN))('%s imports only the layers below it', (folder, forbidden) => {
  const wrong = [...graph]
    .filter(([module]) => module.startsWith(`${folder}/`))
    .flatMap(([module, imports]) =>
      imports
        .filter((i) => forbidden.some((f) => i.startsWith(`${f}/`)) && !EXCEPTIONS[folder]?.test(i))
        .map((i) => `${module} → ${i}`),
    );
  expect(wrong).toEqual([]);
});
