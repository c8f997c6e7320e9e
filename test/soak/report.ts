// The soak's report: figures per fault kind and invariant, and for a violation everything needed
// to reproduce it (the seed, the fault schedule, the histories involved).
import type { FaultRecord } from './faults';
import type { SoakReport } from './soak';

const percentile = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] : undefined;

const seconds = (ms: number | undefined) => (ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`);

function convergenceByKind(faults: FaultRecord[]): string[] {
  const kinds = [...new Set(faults.map((f) => f.kind))].sort();
  return kinds.map((kind) => {
    const of = faults.filter((f) => f.kind === kind);
    const times = of
      .flatMap((f) => (f.convergedMs === undefined ? [] : [f.convergedMs]))
      .sort((a, b) => a - b);
    const never = of.length - times.length;
    return `  ${kind.padEnd(26)} ${String(of.length).padStart(4)}   p50 ${seconds(percentile(times, 50)).padStart(7)}   p99 ${seconds(percentile(times, 99)).padStart(7)}${never ? `   NEVER converged: ${never}` : ''}`;
  });
}

export function formatReport(report: SoakReport): string {
  const w = report.workload;
  const lines = [
    `soak seed ${report.seed}: ${w.completed} lifecycles completed (${w.abandoned} abandoned with their node) in ${seconds(report.durationMs)}`,
    `  ADDs ${w.adds} (errors by code ${JSON.stringify(w.addErrors)}), repeated ${w.repeatedAdds}; DELs ${w.dels} (errors ${JSON.stringify(w.delErrors)}), repeated ${w.repeatedDels}, without ADD ${w.delsWithoutAdd}`,
    `  deletions ${JSON.stringify(w.deletions)}, never Running ${w.neverRunning}, names reused ${w.recreatedNames}`,
    ...Object.entries(w.errorSamples).map(([key, msgs]) => `  ${key}: ${msgs.join(' | ')}`),
    `faults injected: ${report.faults.length}; convergence after each (kind, count, p50, p99):`,
    ...convergenceByKind(report.faults),
    `checker: ${report.samples} samples (${report.incompleteSamples} incomplete: a part was down)`,
    `violations by invariant: ${JSON.stringify(report.violations)}`,
    `left at the end: ${report.leftAtEnd.length ? report.leftAtEnd.join('; ') : 'nothing'}`,
    `histories replayed: ${report.replayed} (${report.replayErrors.length} errors)`,
  ];
  if (w.broken.length) lines.push('runtime-side failures:', ...w.broken.map((b) => `  ${b}`));
  if (report.findings.length || report.replayErrors.length || report.leftAtEnd.length || w.broken.length) {
    lines.push(
      `REPRODUCE: npm run soak -- --seed ${report.seed} --nodes ${report.options.nodes} --lifecycles ${report.options.lifecycles} --minutes ${report.options.minutes} --faults ${report.options.faults.join(',') || 'none'}`,
      'fault schedule (ms since start: kind target, recovered, converged):',
      ...report.faults.map(
        (f) => `  ${f.at}: ${f.kind} ${f.target}, ${f.recoveredAt}, ${f.convergedMs ?? 'never'}`,
      ),
      'violations (read with `temporal workflow show --workflow-id <id>` on the kept state in the dir):',
      ...report.findings.map((f) => `  [${f.invariant}] ${f.detail}  histories: ${f.workflows.join(' ')}`),
      ...report.replayErrors.map((e) => `  [replay] ${e}`),
      `state and logs kept in ${report.dir}`,
    );
  }
  return lines.join('\n');
}

/** Whether the run is clean: no violation, nothing left, every history replayed, no runtime failure. */
export const isClean = (report: SoakReport): boolean =>
  report.findings.length === 0 &&
  report.leftAtEnd.length === 0 &&
  report.replayErrors.length === 0 &&
  report.replayed > 0 &&
  report.workload.broken.length === 0;
