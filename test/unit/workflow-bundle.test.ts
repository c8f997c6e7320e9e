// The workflow bundle that tools/bundle-workflows builds: one zod per V8 context (a preloaded
// holder; every other `require('zod')` pointed at the stand-in).
import { readFileSync } from 'node:fs';
import { WORKFLOW_BUNDLE_PATH } from '../../worker/bundle';

const code = readFileSync(WORKFLOW_BUNDLE_PATH, 'utf8');

/** Module ids that `require('zod')` resolves to, in bundle order. */
const zodTargets = (): string[] =>
  [...code.matchAll(/__webpack_require__\(\/\*! zod \*\/ "([^"]+)"\)/g)].map((m) => m[1] ?? '');

test('the holder of the shared zod is preloaded into the V8 context', () => {
  const preload = /exports\.preloadModules = function preloadModules\(\) \{([^}]*)\}/.exec(code)?.[1] ?? '';
  expect(preload).toMatch(/__webpack_require__\([^)]*"[^"]*\/worker\/sandbox\/shared-zod\.js"\)/);
});

test("bundled code gets zod through the stand-in; only the holder requires zod's own module", () => {
  const targets = zodTargets();
  const direct = targets.filter((t) => t.includes('/node_modules/zod/'));
  expect(direct).toHaveLength(1);
  expect(targets.filter((t) => t.endsWith('/worker/sandbox/zod.js')).length).toBeGreaterThan(0);
  expect(targets.every((t) => t.endsWith('/worker/sandbox/zod.js') || direct.includes(t))).toBe(true);
  // The holder's require sits in a function body: zod is evaluated lazily, never at preload time.
  const holder = code.slice(code.indexOf('function sharedZod()'));
  expect(holder.slice(0, holder.indexOf('\n}'))).toContain(direct[0]);
});
