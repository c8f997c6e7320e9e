// Go's native fuzzing of the shim's parsers: each Fuzz target of cni/shim run with
// `go test -run=^$ -fuzz=^<target>$ -fuzztime=<n>x`, its executions read from Go's own report.
// A failing input is written by Go to cni/shim/testdata/fuzz/<target>/, where `go test` replays
// it from then on. A count, not a duration: with a duration, Go 1.26's coordinator can end a run
// that found nothing with "context deadline exceeded" (golang/go#75804, fixed in Go 1.27).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runToEnd } from '../../tools/processes';

/** The shim's source (the compiled tree sits in dist/, the Go module beside it in the worktree). */
export const SHIM_SOURCE = join(__dirname, '..', '..', '..', 'cni', 'shim');

export interface GoFuzzResult {
  target: string;
  execs: number;
  failed: boolean;
  /** The end of Go's output when it failed. */
  report: string;
}

/** The `func FuzzX(f *testing.F)` targets of the shim's tests. */
export function goFuzzTargets(): string[] {
  return readdirSync(SHIM_SOURCE)
    .filter((name) => name.endsWith('_test.go'))
    .flatMap((name) => [
      ...readFileSync(join(SHIM_SOURCE, name), 'utf8').matchAll(/^func (Fuzz\w+)\(f \*testing\.F\)/gm),
    ])
    .map((m) => m[1] as string)
    .sort();
}

/** The last `execs: N` Go printed (it reports every 3 s and at the end). */
export function execsOf(output: string): number {
  const counts = [...output.matchAll(/execs: (\d+)/g)].map((m) => Number(m[1]));
  return counts[counts.length - 1] ?? 0;
}

/** The failing inputs Go has written for a target. */
function reproducers(target: string): string[] {
  const dir = join(SHIM_SOURCE, 'testdata', 'fuzz', target);
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** One target for `fuzztime` (`100000x` executions, or a duration), one worker: the machine is shared. */
export async function goFuzz(target: string, fuzztime: string): Promise<GoFuzzResult> {
  const before = reproducers(target).length;
  const args = [
    '-C',
    SHIM_SOURCE,
    'test',
    '-run=^$',
    `-fuzz=^${target}$`,
    `-fuzztime=${fuzztime}`,
    '-parallel=1',
  ];
  const finished = await runToEnd('go', args, { env: process.env });
  const output = finished.stdout + finished.stderr;
  // The coordinator's race (see above) fails a run that wrote no input: not a finding.
  const race = output.includes('context deadline exceeded') && reproducers(target).length === before;
  const failed = finished.exitCode !== 0 && !race;
  return { target, execs: execsOf(output), failed, report: failed ? output.slice(-3000) : '' };
}
