// The soak's report: figures per fault kind and invariant, and for a violation everything needed
// to reproduce it (the seed, the fault schedule, the histories involved).
import type { FaultRecord } from './faults';
import type { SoakReport } from './soak';

const percentile = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] : undefined;

const seconds = (ms: number | undefined) => (ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`);

function convergenceLine(label: string, of: FaultRecord[]): string {
  const times = of.flatMap((f) => (f.convergedMs === undefined ? [] : [f.convergedMs])).sort((a, b) => a - b);
  const never = of.length - times.length;
  return `  ${label.padEnd(26)} ${String(of.length).padStart(4)}   p50 ${seconds(percentile(times, 50)).padStart(7)}   p99 ${seconds(percentile(times, 99)).padStart(7)}${never ? `   NEVER converged: ${never}` : ''}`;
}

/** Per kind; then the faults injected as pairs (each pair once). */
function convergenceByKind(faults: FaultRecord[]): string[] {
  const kinds = [...new Set(faults.map((f) => f.kind))].sort();
  const paired = faults.filter((f) => f.with !== undefined && f.kind <= f.with);
  return [
    ...kinds.map((kind) =>
      convergenceLine(
        kind,
        faults.filter((f) => f.kind === kind),
      ),
    ),
    ...(paired.length ? [convergenceLine('(two at once)', paired)] : []),
  ];
}

/** The figures the bar is set on: duplicates by where they were seen, leaks, losses, failures. */
function violationSummary(v: SoakReport['violations']): string {
  return [
    `duplicate: tables ${v['duplicate-table']}, leases ${v['duplicate-lease']}, kernel ${v['duplicate-kernel']}, answer history ${v['duplicate-answer']}`,
    `leaked ${v.leaked}, lost ${v.lost}, ptp interface ${v['ptp-interface']}`,
    `Failed workflows ${v['workflow-failed']}, failed workflow tasks ${v['workflow-task-failed']}, operator actions mishandled ${v.operator}, processes crashed ${v.crashed}`,
  ].join('; ');
}

const historyLine = (h: SoakReport['answerHistory']): string =>
  'error' in h
    ? `answer history: UNREADABLE: ${h.error}`
    : `answer history: ${h.answers} ADD answers to ${h.pods} pods, checked as intervals; ` +
      `${h.kept.sticky} to sticky StatefulSet pods and ${h.kept.static} to static-address pods, checked kept; ` +
      `${h.kept.selected} to pods that selected the second pool, checked in it (every other answer outside it)`;

export function formatReport(report: SoakReport): string {
  const w = report.workload;
  const lines = [
    `soak seed ${report.seed}: ${w.completed} lifecycles completed (${w.abandoned} abandoned with their node) in ${seconds(report.durationMs)}`,
    `  ADDs ${w.adds} (errors by code ${JSON.stringify(w.addErrors)}), repeated ${w.repeatedAdds}; DELs ${w.dels} (errors ${JSON.stringify(w.delErrors)}), repeated ${w.repeatedDels}, without ADD ${w.delsWithoutAdd}`,
    `  deletions ${JSON.stringify(w.deletions)}, never Running ${w.neverRunning}, deleted before ADD ${w.deletedBeforeAdd}, names reused ${w.recreatedNames}, run again on a new machine ${w.reruns}`,
    `  errors by reason ${JSON.stringify(w.errorReasons)}`,
    ...Object.entries(w.errorSamples).map(([key, msgs]) => `  ${key}: ${msgs.join(' | ')}`),
    `faults injected: ${report.faults.length}; convergence after each (kind, count, p50, p99):`,
    ...convergenceByKind(report.faults),
    ...report.faults
      .filter((f) => f.error)
      .map((f) => `  FAULT NOT INJECTED: ${f.kind} ${f.target}: ${f.error}`),
    `checker: ${report.samples} samples (${report.incompleteSamples} incomplete: a part was down); ${report.unlistedLeases} reads by id of open leases visibility did not list yet`,
    historyLine(report.answerHistory),
    `violations: ${violationSummary(report.violations)}`,
    `left at the end: ${report.leftAtEnd.length ? report.leftAtEnd.join('; ') : 'nothing'}`,
    `histories replayed: ${report.replayed} (${report.replayErrors.length} errors; ${report.sdkUpdateOrder.length} by the SDK core's order of an update after a timed-out task, counted apart)`,
    ...report.sdkUpdateOrder.map((e) => `  SDK update order: ${e.split(':')[0]}`),
    `control worker exits on a thaw after a freeze past the SDK's activation timeout (Node 20, counted apart, recovery checked): ${report.thawCrashes.length}`,
    `workflow tasks failed and completed by a later attempt: ${report.recoveredTasks.length}`,
    ...report.recoveredTasks.slice(0, 10).map((t) => `  ${t}`),
  ];
  if (w.broken.length) lines.push('runtime-side failures:', ...w.broken.map((b) => `  ${b}`));
  lines.push(
    'fault schedule (ms since start: kind target, recovered, converged):',
    ...report.faults.map(
      (f) =>
        `  ${f.at}: ${f.kind}${f.with ? ` (with ${f.with})` : ''} ${f.target}, ${f.recoveredAt}, ${f.convergedMs ?? 'never'}`,
    ),
  );
  if (!isClean(report)) {
    lines.push(
      `REPRODUCE: npm run soak -- --seed ${report.seed} --nodes ${report.options.nodes} --lifecycles ${report.options.lifecycles} --minutes ${report.options.minutes} --in-flight ${report.options.inFlight} --overlap ${report.options.overlap} --fault-every-seconds ${report.options.faultEverySeconds} --every-fault ${report.options.everyFault} --at-least ${report.options.atLeast} --faults ${report.options.faults.join(',') || 'none'}`,
      'violations (read with `temporal workflow show --workflow-id <id>` on the kept state in the dir):',
      ...report.findings.map((f) => `  [${f.invariant}] ${f.detail}  histories: ${f.workflows.join(' ')}`),
      ...report.replayErrors.map((e) => `  [replay] ${e}`),
      `state and logs kept in ${report.dir}`,
    );
  }
  return lines.join('\n');
}

/**
 * Whether the run is clean: no violation, nothing left, every history replayed, no runtime
 * failure, every fault injected; and the checker read something: complete samples, and answers.
 */
export function isClean(report: SoakReport): boolean {
  return (
    report.findings.length === 0 &&
    report.leftAtEnd.length === 0 &&
    report.replayErrors.length === 0 &&
    report.replayed > 0 &&
    report.workload.broken.length === 0 &&
    report.faults.every((f) => f.error === undefined) &&
    report.samples > report.incompleteSamples &&
    !('error' in report.answerHistory) &&
    report.answerHistory.answers > 0
  );
}
