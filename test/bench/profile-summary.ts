// `node dist/test/bench/profile-summary.js DIR`: where the CPU went in the V8 profiles a bench run
// wrote (`NETLEASE_BENCH_PROFILE=DIR npm run bench`, a folder per process): per profile (a
// process's main or worker thread), the sampled busy time by part (the SDK's native calls, the SDK, the workflow bundle,
// zod, the Kubernetes client, netlease, Node, GC) and the functions with the most self time. It
// tells which floor a bench row stands on; the bench's own meters (/proc) give the totals.
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { z } from 'zod';

const ProfileSchema = z.object({
  nodes: z.array(
    z.object({
      id: z.number(),
      callFrame: z.object({ functionName: z.string(), url: z.string(), lineNumber: z.number() }),
    }),
  ),
  samples: z.array(z.number()),
  timeDeltas: z.array(z.number()),
});
type CallFrame = z.infer<typeof ProfileSchema>['nodes'][number]['callFrame'];

/** The part of the process a frame belongs to, by its script. */
export function partOf({ url, functionName }: CallFrame): string {
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(program)') return 'V8 and native (program)';
  if (url.includes('workflow-bundle')) return 'workflow bundle (workflow code and the SDK in the sandbox)';
  if (url.includes('/@temporalio/')) return 'Temporal SDK (worker side)';
  if (url.includes('/zod/')) return 'zod';
  if (url.includes('/@kubernetes/')) return 'Kubernetes client';
  if (url.includes('/node_modules/')) return 'other packages';
  if (url.includes('/dist/')) return 'netlease';
  if (url.startsWith('node:') || url === '') return functionName ? 'Node (JS and native calls)' : 'Node';
  return 'other';
}

/** A script as a reader finds it: its package and file name, or its file name. */
export function scriptName(url: string): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1];
  return pkg ? `${pkg}/${basename(url)}` : basename(url);
}

export interface ProfileSummary {
  name: string;
  busyMs: number;
  parts: Array<[string, number]>;
  top: Array<[string, number]>;
}

/** Self time by part and by function (ms), idle left out. */
export function summarise(name: string, text: string, topN = 12): ProfileSummary {
  const profile = ProfileSchema.parse(JSON.parse(text));
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const parts = new Map<string, number>();
  const functions = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const frame = frames.get(id);
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    if (!frame || partOf(frame) === 'idle') return;
    const part = partOf(frame);
    parts.set(part, (parts.get(part) ?? 0) + ms);
    const where = `${frame.functionName || '(anonymous)'} ${scriptName(frame.url)}:${frame.lineNumber + 1}`;
    functions.set(where, (functions.get(where) ?? 0) + ms);
  });
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  const busyMs = [...parts.values()].reduce((a, b) => a + b, 0);
  return { name, busyMs, parts: sorted(parts), top: sorted(functions).slice(0, topN) };
}

function print(s: ProfileSummary): void {
  const pct = (ms: number) => `${((100 * ms) / (s.busyMs || 1)).toFixed(1)} %`;
  console.log(`\n${s.name}: ${(s.busyMs / 1000).toFixed(1)} s busy`);
  for (const [part, ms] of s.parts) console.log(`  ${pct(ms).padStart(7)}  ${part}`);
  console.log('  most self time:');
  for (const [where, ms] of s.top) console.log(`  ${pct(ms).padStart(7)}  ${where}`);
}

if (require.main === module) {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: profile-summary.js DIR (the NETLEASE_BENCH_PROFILE directory)');
  // One folder per process (control, agent, …); a file per thread.
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) =>
    f.endsWith('.cpuprofile'),
  );
  if (!files.length) throw new Error(`no .cpuprofile under ${dir}`);
  const summaries = files.map((f) => summarise(f, readFileSync(join(dir, f), 'utf8')));
  for (const s of summaries.sort((a, b) => b.busyMs - a.busyMs)) print(s);
}
