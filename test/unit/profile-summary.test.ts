// The bench's profile summary: self time by part and by function, idle left out, a sample's time
// being the delta that follows it.
import { partOf, scriptName, summarise } from '../bench/profile-summary';

const frame = (functionName: string, url: string, lineNumber = 0) => ({ functionName, url, lineNumber });

test('a frame belongs to the part its script says', () => {
  expect(partOf(frame('run', '/x/workflow-bundle-1a2b.js'))).toMatch(/^workflow bundle/);
  expect(partOf(frame('f', '/x/node_modules/@temporalio/worker/lib/worker.js'))).toMatch(/^Temporal SDK/);
  expect(partOf(frame('parse', '/x/node_modules/zod/v3/types.js'))).toBe('zod');
  expect(partOf(frame('get', '/x/node_modules/@kubernetes/client-node/dist/api.js'))).toBe(
    'Kubernetes client',
  );
  expect(partOf(frame('take', '/work/main/dist/cni/handle.js'))).toBe('netlease');
  expect(partOf(frame('(garbage collector)', ''))).toBe('GC');
  expect(partOf(frame('(idle)', ''))).toBe('idle');
  expect(partOf(frame('readFile', 'node:fs'))).toMatch(/^Node/);
});

test('a script is named by its package and file', () => {
  expect(scriptName('file:///x/node_modules/@temporalio/worker/lib/workflow/vm-shared.js')).toBe(
    '@temporalio/worker/vm-shared.js',
  );
  expect(scriptName('/x/node_modules/ws/lib/index.js')).toBe('ws/index.js');
  expect(scriptName('/work/main/dist/cni/handle.js')).toBe('handle.js');
});

test('self time is summed per part and function, idle left out', () => {
  const profile = {
    nodes: [
      { id: 1, callFrame: frame('(idle)', '') },
      { id: 2, callFrame: frame('parse', '/x/node_modules/zod/v3/types.js', 9) },
      { id: 3, callFrame: frame('take', '/w/dist/cni/handle.js', 4) },
    ],
    samples: [2, 3, 2, 1, 2],
    timeDeltas: [0, 3000, 1000, 2000, 50_000, 4000],
  };
  const s = summarise('agent/CPU.1.cpuprofile', JSON.stringify(profile));
  expect(s.busyMs).toBe(3 + 1 + 2 + 4);
  expect(s.parts).toEqual([
    ['zod', 9],
    ['netlease', 1],
  ]);
  expect(s.top[0]).toEqual(['parse zod/types.js:10', 9]);
});

test('a file that is not a V8 profile is refused', () => {
  expect(() => summarise('x', '{"nodes":[]}')).toThrow();
});
