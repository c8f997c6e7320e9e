// The workflow bundle that tools/bundle-workflows builds: one zod per V8 context (a preloaded
// holder; every other `require('zod')` pointed at the stand-in), no configuration schemas, and an
// inline source map without the sources' text.
import { readFileSync } from 'node:fs';
import { WORKFLOW_BUNDLE_PATH } from '../../worker/control/bundle';

const code = readFileSync(WORKFLOW_BUNDLE_PATH, 'utf8');

interface SourceMap {
  sources: string[];
  sourcesContent?: unknown[];
  mappings: string;
}

/** The map the SDK reads (Worker: parseWorkflowCode): the last inline base64 sourceMappingURL. */
function inlineSourceMap(): SourceMap {
  const comment = code.lastIndexOf('//# sourceMappingURL=data:');
  const base64 = code.indexOf('base64,', comment) + 'base64,'.length;
  return JSON.parse(Buffer.from(code.slice(base64), 'base64').toString('utf8')) as SourceMap;
}

/** Module ids that `require('zod')` resolves to, in bundle order. */
const zodTargets = (): string[] =>
  [...code.matchAll(/__webpack_require__\(\/\*! zod \*\/ "([^"]+)"\)/g)].map((m) => m[1] ?? '');

test('the holder of the shared zod is preloaded into the V8 context', () => {
  const preload = /exports\.preloadModules = function preloadModules\(\) \{([^}]*)\}/.exec(code)?.[1] ?? '';
  expect(preload).toMatch(/__webpack_require__\([^)]*"[^"]*\/worker\/control\/sandbox\/shared-zod\.js"\)/);
});

test("bundled code gets zod through the stand-in; only the holder requires zod's own module", () => {
  const targets = zodTargets();
  const direct = targets.filter((t) => t.includes('/node_modules/zod/'));
  expect(direct).toHaveLength(1);
  expect(targets.filter((t) => t.endsWith('/worker/control/sandbox/zod.js')).length).toBeGreaterThan(0);
  expect(targets.every((t) => t.endsWith('/worker/control/sandbox/zod.js') || direct.includes(t))).toBe(true);
  // The holder's require sits in a function body: zod is evaluated lazily, never at preload time.
  const holder = code.slice(code.indexOf('function sharedZod()'));
  expect(holder.slice(0, holder.indexOf('\n}'))).toContain(direct[0]);
});

test("the configuration's schemas stay out of the bundle (each workflow would build them again)", () => {
  const modules = [...code.matchAll(/^\/\*\*\*\/ "([^"]+)"/gm)].map((m) => m[1] ?? '');
  expect(modules.some((m) => m.endsWith('/domain/text-schemas.js'))).toBe(true);
  expect(modules.filter((m) => m.endsWith('/domain/config.js'))).toEqual([]);
});

test('the inline source map maps to the TypeScript sources and carries none of their text', () => {
  const map = inlineSourceMap();
  expect(map.sourcesContent ?? []).toEqual([]);
  expect(map.sources.some((s) => s.endsWith('/workflows/lease.ts'))).toBe(true);
  // Line and column mappings (';' per generated line, ',' between segments), not the cheap kind.
  expect(map.mappings.split(';').length).toBeGreaterThan(code.split('\n').length / 2);
  expect(map.mappings).toContain(',');
});
