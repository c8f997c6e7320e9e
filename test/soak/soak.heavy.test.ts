// The short soak of `npm test` (docs/testing.md, "The soak"): a few minutes of pod lifecycles on four nodes
// with the faults issue 25 named injected at least once each, one at a time: Node
// re-registrations that keep their pods (same machine, and a new one whose kubelet runs them
// again), every operator action (terminate, reset, empty and made-up signals, cancel, a pool config
// change across a restart), a control worker killed and an agent killed mid-activation, and the
// offer-written pause point. `npm run soak` runs every kind, two at a time. Judged by the
// independent checker and the answer history; any violation fails it, and the report printed says
// how to reproduce (NETLEASE_SOAK_SEED=<seed>).
import { SoakOptionsSchema, type FaultKind } from './options';
import { formatReport, isClean } from './report';
import type { FaultRecord } from './faults';
import { runSoak, type SoakReport } from './soak';

let report: SoakReport;

/** One of each kind issue 25 asked of the short soak, and the process faults they meet in the field. */
const SHORT_SOAK_FAULTS: FaultKind[] = [
  'node-reregistered',
  'node-moved',
  'operator-terminate',
  'operator-reset',
  'operator-signals',
  'operator-cancel',
  'pool-config-change',
  'kill-control',
  'kill-agent-mid-activation',
  'pause-offer-written',
];

test('the short soak: each kind asked of it, at least 300 lifecycles, no invariant violated', async () => {
  const options = SoakOptionsSchema.parse({
    seed: process.env.NETLEASE_SOAK_SEED,
    lifecycles: 100_000, // bounded by minutes
    minutes: 3, // and on, up to three times as long, until every kind was injected
    everyFault: true,
    atLeast: 300, // and 300 lifecycles completed (the CI's loaded machine: 271 in 3 minutes)
    nodes: 4,
    faultEverySeconds: 4,
    overlap: 0,
    inFlight: 16,
    faults: SHORT_SOAK_FAULTS,
  });
  report = await runSoak(options, (line) => process.stdout.write(`${line}\n`));
  process.stdout.write(`${formatReport(report)}\n`);
  expect(report.workload.completed).toBeGreaterThanOrEqual(300);
  expect(SHORT_SOAK_FAULTS.filter((kind) => !report.faults.some((f) => f.kind === kind))).toEqual([]);
  expect(report.faults.filter((f) => f.error)).toEqual([]);
  // A Node registered again while pods bound to it ran, and (a new machine) those pods run again.
  const kept = (f: FaultRecord) => Number(/\((\d+) pods kept/.exec(f.target)?.[1] ?? 0);
  expect(report.faults.some((f) => f.kind.startsWith('node-') && kept(f) > 0)).toBe(true);
  expect(report.workload.reruns).toBeGreaterThan(0);
  // Each pause point was reached (not only asked for).
  const pauses = report.faults.filter((f) => f.kind.startsWith('pause-'));
  expect(pauses.filter((f) => / not reached /.test(f.target)).map((f) => f.target)).toEqual([]);
  expect('answers' in report.answerHistory && report.answerHistory.answers).toBeGreaterThan(300);
  // Sticky ordinals, static addresses and the second pool were in the workload, their promises checked.
  expect('kept' in report.answerHistory && report.answerHistory.kept.sticky).toBeGreaterThan(5);
  expect('kept' in report.answerHistory && report.answerHistory.kept.static).toBeGreaterThan(2);
  expect('kept' in report.answerHistory && report.answerHistory.kept.selected).toBeGreaterThan(10);
  expect(report.samples - report.incompleteSamples).toBeGreaterThan(10); // the checker read something
  expect(report.violations).toEqual(Object.fromEntries(Object.keys(report.violations).map((k) => [k, 0])));
  expect(report.faults.filter((f) => f.convergedMs === undefined).map((f) => f.kind)).toEqual([]);
  expect(isClean(report)).toBe(true);
}, 1_800_000);
