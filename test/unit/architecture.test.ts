// The layout holds: no import circles (type-only imports included, since they tie modules
// together just the same), and every import obeys the layer table in layers.js (which ESLint
// reads too, so the two cannot differ).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, normalize, relative } from 'node:path';

const root = join(__dirname, '..', '..', '..');

interface LayerTable {
  FOLDERS: string[];
  LAYERS: Array<{ from: string; forbidden: string[] }>;
  /** Why `from` must not import `to` (undefined: it may). */
  forbiddenImport(from: string, to: string, typeOnly: boolean): string | undefined;
}
const { FOLDERS, LAYERS, forbiddenImport } = createRequire(__filename)(join(root, 'layers.js')) as LayerTable;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

interface Import {
  module: string;
  /** `import type … from` or `export type … from`: types only. */
  typeOnly: boolean;
}

/** A module's project imports: `… from './x'` statements and `import('./x')`. */
const IMPORT = /(?:^(import|export)(\s+type)?\b[^;]*?\bfrom|\bimport\()\s*'(\.[^']+)'/gm;

/** module (path without .ts, relative to the root) → the project modules it imports. */
function importGraph(): Map<string, Import[]> {
  const graph = new Map<string, Import[]>();
  for (const file of FOLDERS.flatMap((f) => sources(join(root, f)))) {
    const module = relative(root, file).replace(/\.ts$/, '');
    const imports = [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((m) => ({
      module: normalize(join(dirname(module), m[3] ?? '')),
      typeOnly: m[2] !== undefined,
    }));
    graph.set(module, imports);
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
const edges = new Map([...graph].map(([module, imports]) => [module, imports.map((i) => i.module)]));

test('the import graph reads every source folder', () => {
  for (const folder of FOLDERS) expect([...graph.keys()].some((m) => m.startsWith(`${folder}/`))).toBe(true);
  expect(graph.size).toBeGreaterThan(50);
});

test('no import circles', () => {
  expect(cycles(edges).map((c) => c.join(' → '))).toEqual([]);
});

test('the cycle finder finds a circle', () => {
  const circular = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
  ]);
  expect(cycles(circular)).toEqual([['a', 'b', 'c', 'a']]);
});

test('every import obeys the layer table', () => {
  const wrong = [...graph].flatMap(([module, imports]) =>
    imports.flatMap(({ module: to, typeOnly }) => {
      const why = forbiddenImport(module, to, typeOnly);
      return why ? [`${module} → ${to}: ${why}`] : [];
    }),
  );
  expect(wrong).toEqual([]);
});

test('the import reader sees type-only imports and every rule binds modules that exist', () => {
  const addressImports = graph.get('workflows/lease/addresses') ?? [];
  expect(addressImports).toContainEqual({ module: 'activities/control', typeOnly: true });
  expect(graph.get('workflows/lease/run') ?? []).toContainEqual({ module: 'domain/ids', typeOnly: false });
  for (const { from } of LAYERS) expect([...graph.keys()].some((m) => m.startsWith(`${from}/`))).toBe(true);
});

test.each([
  ['worker/agent/node-agent', 'worker/control/bundle', false],
  ['worker/control/control', 'worker/agent/offers', true],
  ['cni/handle', 'worker/agent/offers', false],
  ['workflows/lease', 'activities/control', false],
  ['workflows/lease', 'temporal/signals', true],
  ['domain/ids', 'storage/durable-files', false],
  ['cli/check', 'workflows/lease', false],
  ['kernel/ip', 'cli/args', false],
])('the table forbids %s → %s (type only: %s)', (from, to, typeOnly) => {
  expect(forbiddenImport(from, to, typeOnly)).toEqual(expect.any(String));
});

test.each([
  ['worker/agent/node-agent', 'worker/config-file', false],
  ['worker/control/control', 'worker/process-flags', false],
  ['worker/agent/cni-api', 'cni/handle', false],
  ['workflows/lease', 'activities/control', true],
  ['cli/check', 'workflows/lease-messages', false],
  ['cli/context', 'worker/config-file', false],
  ['activities/addresses', 'temporal/workflow-gone', false],
])('the table allows %s → %s (type only: %s)', (from, to, typeOnly) => {
  expect(forbiddenImport(from, to, typeOnly)).toBeUndefined();
});
