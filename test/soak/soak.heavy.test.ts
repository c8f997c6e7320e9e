// The short soak of `npm test` (README, "The soak"): about three minutes of pod lifecycles on four
// nodes with every fault kind injected at least once, judged by the independent checker. Any
// violation fails it, and the report printed says how to reproduce (NETLEASE_SOAK_SEED=<seed>).
import { FAULT_KINDS, SoakOptionsSchema } from './options';
import { formatReport, isClean } from './report';
import { runSoak, type SoakReport } from './soak';

let report: SoakReport;

test('the short soak: every fault kind, at least 300 lifecycles, no invariant violated', async () => {
  const options = SoakOptionsSchema.parse({
    seed: process.env.NETLEASE_SOAK_SEED,
    lifecycles: 100_000, // bounded by minutes
    minutes: 3,
    everyFault: true,
    nodes: 4,
    faultEverySeconds: 3,
    inFlight: 16,
  });
  report = await runSoak(options, (line) => process.stdout.write(`${line}\n`));
  process.stdout.write(`${formatReport(report)}\n`);
  expect(report.workload.completed).toBeGreaterThanOrEqual(300);
  expect(FAULT_KINDS.filter((kind) => !report.faults.some((f) => f.kind === kind))).toEqual([]);
  expect(report.samples - report.incompleteSamples).toBeGreaterThan(10); // the checker read something
  expect(report.violations).toEqual(Object.fromEntries(Object.keys(report.violations).map((k) => [k, 0])));
  expect(report.faults.filter((f) => f.convergedMs === undefined).map((f) => f.kind)).toEqual([]);
  expect(isClean(report)).toBe(true);
}, 900_000);
