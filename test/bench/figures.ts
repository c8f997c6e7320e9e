// How the benchmark summarises latencies and CPU, and the table it prints.
import type { PhaseResult } from './phases';
import { totalMs } from './proc';

export const percentile = (values: number[], p: number): number =>
  [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) * p)] ?? NaN;

export const ms = (v: number): string => (Number.isNaN(v) ? '–' : v < 10 ? v.toFixed(1) : v.toFixed(0));

export const p50p95p99 = (values: number[]): string =>
  `${[0.5, 0.95, 0.99].map((p) => ms(percentile(values, p))).join(' / ')} (${values.length})`;

export interface Row {
  label: string;
  seq: PhaseResult;
  /** Absent: the row has no 16-in-flight phase (ptp). */
  busy?: PhaseResult;
}

export const addsPerSecond = (r: PhaseResult): number => r.pairs / r.seconds;

/** CPU ms per ADD+DEL over both phases and every process of the row. */
export function cpuPerPair(row: Row): number {
  const phases = row.busy ? [row.seq, row.busy] : [row.seq];
  const pairs = phases.reduce((n, p) => n + p.pairs, 0);
  return phases.reduce((t, p) => t + totalMs(p.cpu), 0) / pairs;
}

/** Where a row's CPU went, per process, ms per ADD+DEL. */
export function cpuBreakdown(row: Row): string {
  const phases = row.busy ? [row.seq, row.busy] : [row.seq];
  const pairs = phases.reduce((n, p) => n + p.pairs, 0);
  const names = Object.keys(row.seq.cpu);
  const per = names.map((name) => {
    const spent = phases.reduce((t, p) => t + (p.cpu[name] ?? 0), 0) / pairs;
    return `${name} ${ms(spent)}`;
  });
  return `${row.label}: ${per.join(', ')}`;
}

export function table(rows: Row[], lanes: number): string {
  const head = `| plugin | ADD seq p50 / p95 / p99 ms (n) | ADD @${lanes} p50 / p95 / p99 ms (n) | ADD/s @${lanes} | CPU ms per ADD+DEL |`;
  const lines = rows.map((r) =>
    [
      r.label,
      p50p95p99(r.seq.adds),
      r.busy ? p50p95p99(r.busy.adds) : '',
      r.busy ? addsPerSecond(r.busy).toFixed(0) : '',
      ms(cpuPerPair(r)),
    ].join(' | '),
  );
  return [head, '|---|---|---|---|---|', ...lines.map((l) => `| ${l} |`)].join('\n');
}

export interface Target {
  what: string;
  limit: string;
  /** Undefined: not measured in this run. */
  value?: number;
  ok: (v: number) => boolean;
}

export function targetLines(targets: Target[]): string[] {
  return targets.map((t) => {
    if (t.value === undefined || Number.isNaN(t.value)) return `  -  ${t.what} ${t.limit}: not measured`;
    return `  ${t.ok(t.value) ? 'met' : 'MISSED'}  ${t.what} ${t.limit}: ${ms(t.value)}`;
  });
}
