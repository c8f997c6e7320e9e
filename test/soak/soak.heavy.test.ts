// The short soak of `npm test` (README, "The soak"): a few minutes of pod lifecycles on four nodes
// with every fault kind injected at least once, two at a time: among them Node re-registrations
// that keep their pods, every operator action, and every pause point reached. Judged by the
// independent checker and the answer history; any violation fails it, and the report printed says
// how to reproduce (NETLEASE_SOAK_SEED=<seed>).
import { FAULT_KINDS, SoakOptionsSchema } from './options';
import { formatReport, isClean } from './report';
import type { FaultRecord } from './faults';
import { runSoak, type SoakReport } from './soak';

let report: SoakReport;

test('the short soak: every fault kind, at least 300 lifecycles, no invariant violated', async () => {
  const options = SoakOptionsSchema.parse({
    seed: process.env.NETLEASE_SOAK_SEED,
    lifecycles: 100_000, // bounded by minutes
    minutes: 4, // and on, up to three times as long, until every kind was injected
    everyFault: true,
    nodes: 4,
    faultEverySeconds: 1,
    overlap: 1,
    inFlight: 16,
  });
  report = await runSoak(options, (line) => process.stdout.write(`${line}\n`));
  process.stdout.write(`${formatReport(report)}\n`);
  expect(report.workload.completed).toBeGreaterThanOrEqual(300);
  expect(FAULT_KINDS.filter((kind) => !report.faults.some((f) => f.kind === kind))).toEqual([]);
  expect(report.faults.filter((f) => f.error)).toEqual([]);
  // A Node registered again while pods bound to it ran, and (a new machine) those pods run again.
  const kept = (f: FaultRecord) => Number(/\((\d+) pods kept/.exec(f.target)?.[1] ?? 0);
  expect(report.faults.some((f) => f.kind.startsWith('node-') && kept(f) > 0)).toBe(true);
  expect(report.workload.reruns).toBeGreaterThan(0);
  // Each pause point was reached (not only asked for).
  const pauses = report.faults.filter((f) => f.kind.startsWith('pause-'));
  expect(pauses.filter((f) => / not reached /.test(f.target)).map((f) => f.target)).toEqual([]);
  expect('answers' in report.answerHistory && report.answerHistory.answers).toBeGreaterThan(300);
  expect(report.samples - report.incompleteSamples).toBeGreaterThan(10); // the checker read something
  expect(report.violations).toEqual(Object.fromEntries(Object.keys(report.violations).map((k) => [k, 0])));
  expect(report.faults.filter((f) => f.convergedMs === undefined).map((f) => f.kind)).toEqual([]);
  expect(isClean(report)).toBe(true);
}, 1_800_000);
