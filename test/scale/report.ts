// The figures of every size as one table (a row per figure, a column per size), for the terminal
// and docs/benchmarks.md.
import { ms } from '../bench/figures';
import { p50, p99 } from './measure';
import type { ScaleReport, SizeFigures } from './scale';

const kib = (bytes: number) => (bytes / 1024).toFixed(1);
const mib = (v: number | undefined) => (v === undefined ? '–' : v.toFixed(0));
/** The production server's PostgreSQL, beside Temporal's own CPU. */
const postgresShare = (v: number | undefined) => (v === undefined ? '' : ` (+ ${ms(v)} PostgreSQL)`);

const ROWS: Array<[string, (s: SizeFigures) => string]> = [
  ['nodes', (s) => String(s.nodes)],
  ['open leases', (s) => String(s.leases)],
  ['fill: leases admitted/s (ADD + Running)', (s) => s.fillPerSecond.toFixed(1)],
  [
    'reconcile run s (its activity alone)',
    (s) => `${s.reconcile.seconds.toFixed(2)} (${s.reconcile.activitySeconds.toFixed(2)})`,
  ],
  [
    'control RSS MiB before / peak in reconcile',
    (s) => `${mib(s.reconcile.rssBeforeMiB)} / ${mib(s.reconcile.rssPeakMiB)}`,
  ],
  ['pool hand-outs (blocks held)', (s) => String(s.handOuts.blocks)],
  [
    'hand-out ms p50 / p99 (acquireBlock, sampled nodes)',
    (s) => `${ms(p50(s.handOuts.handOutMs))} / ${ms(p99(s.handOuts.handOutMs))}`,
  ],
  ['pool history events (current run)', (s) => String(s.handOuts.poolHistoryEvents)],
  ['list all open leases ms', (s) => `${ms(s.listing.allMs)} (${s.listing.allLeases})`],
  [
    'list by NodeName ms p50 / max',
    (s) => `${ms(p50(s.listing.perNodeMs))} / ${ms(Math.max(...s.listing.perNodeMs))}`,
  ],
  [
    'list by PodUID ms p50 / max (netleasectl; no longer the pod watcher)',
    (s) => `${ms(p50(s.listing.perPodMs))} / ${ms(Math.max(...s.listing.perPodMs))}`,
  ],
  [
    'control RSS MiB idle / filled / end',
    (s) => `${mib(s.controlRssMiB.idle)} / ${mib(s.controlRssMiB.filled)} / ${mib(s.controlRssMiB.end)}`,
  ],
  ['Temporal RSS MiB (end) / agents process', (s) => `${mib(s.temporalRssMiB)} / ${mib(s.agentsRssMiB)}`],
  [
    'lease history: events / KiB (full lifecycle)',
    (s) => `${s.history.closed.eventsMean.toFixed(0)} / ${kib(s.history.closed.bytesMean)}`,
  ],
  [
    'lease history: events / KiB (open, Running)',
    (s) => `${s.history.open.eventsMean.toFixed(0)} / ${kib(s.history.open.bytesMean)}`,
  ],
  [
    'node history: events / KiB',
    (s) => `${s.handOuts.nodeHistory.eventsMean.toFixed(0)} / ${kib(s.handOuts.nodeHistory.bytesMean)}`,
  ],
  ['lifecycles/s at N in flight', (s) => s.throughput.perSecond.toFixed(1)],
  [
    'CPU ms per lifecycle: control / Temporal',
    (s) =>
      `${ms(s.throughput.cpuMsPerLifecycle.control ?? NaN)} / ${ms(s.throughput.cpuMsPerLifecycle.temporal ?? NaN)}` +
      postgresShare(s.throughput.cpuMsPerLifecycle.postgres),
  ],
  ['release all s', (s) => s.end.releaseSeconds.toFixed(0)],
  ['Released / expected, badly ended', (s) => `${s.end.released} / ${s.end.expected}, ${s.end.badlyEnded}`],
];

export function formatTable(report: ScaleReport, inFlight: number): string {
  const header = ['figure', ...report.sizes.map((s) => `${s.nodes} nodes`)];
  const rows = ROWS.map(([label, cell]) => [
    label.replace('N in flight', `${inFlight} in flight`),
    ...report.sizes.map(cell),
  ]);
  const widths = header.map((_, i) => Math.max(...[header, ...rows].map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** Every lease Released and nothing Failed, Terminated or TimedOut, at every size. */
export const isClean = (report: ScaleReport): boolean =>
  report.sizes.every((s) => s.end.released === s.end.expected && s.end.badlyEnded === 0);
