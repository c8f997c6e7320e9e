// What a fuzzing run counts, per target, and how the long run prints it.
import type { Judged } from './oracle';

export type Target = 'shim' | 'api';

export interface Counts {
  inputs: number;
  accepted: number;
  rejected: number;
  /** Hangs, exits other than 0 and 1, answers that are no CNI answer, the agent gone. */
  crashes: number;
  hangs: number;
  /** A rejected call that changed state. */
  stateViolations: number;
  /** A wrong code, an unnamed field, 11 for a mistake in the request, an invalid ADD accepted. */
  answerProblems: number;
  /** Answers by code (`ok` for success). */
  codes: Record<string, number>;
  slowestMs: number;
}

export interface Finding {
  target: Target;
  seed: number;
  path: string | null;
  counterexample: string;
  problems: string[];
}

export const emptyCounts = (): Counts => ({
  inputs: 0,
  accepted: 0,
  rejected: 0,
  crashes: 0,
  hangs: 0,
  stateViolations: 0,
  answerProblems: 0,
  codes: {},
  slowestMs: 0,
});

export /** One answer counted: by code, and as a crash, hang or answer problem. */
function tally(counts: Counts, { verdict, problems, ms }: Judged & { ms: number }): void {
  counts.inputs++;
  counts.slowestMs = Math.max(counts.slowestMs, ms);
  const key =
    verdict.kind === 'rejected' ? `code ${verdict.code}` : verdict.kind === 'accepted' ? 'ok' : 'broken';
  counts.codes[key] = (counts.codes[key] ?? 0) + 1;
  if (verdict.kind === 'accepted') counts.accepted++;
  if (verdict.kind === 'rejected') counts.rejected++;
  if (verdict.kind === 'broken') counts.crashes++;
  if (problems.some((p) => p.startsWith('hang'))) counts.hangs++;
  if (verdict.kind !== 'broken' && problems.length) counts.answerProblems++;
}

/** One line of the long run's report. */
export const countsRow = (target: Target, c: Counts): string =>
  `${target.padEnd(6)} inputs ${c.inputs}, accepted ${c.accepted}, refused ${c.rejected}, crashes ${c.crashes} ` +
  `(hangs ${c.hangs}), refusals that changed state ${c.stateViolations}, answer problems ${c.answerProblems}, ` +
  `slowest ${Math.round(c.slowestMs)} ms; answers ${JSON.stringify(c.codes)}`;
