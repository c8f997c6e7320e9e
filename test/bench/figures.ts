// How the benchmark summarises latencies and CPU, and the table it prints.
import type { PhaseResult } from './phases';
import { totalMs, type CpuSample } from './proc';
import { mergedWork, type WorkflowWork } from './workflow-work';

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

/** The Kubernetes API, whose share of the pod operations every lifecycle row is charged. */
export const API_PROCESSES = ['apiserver', 'etcd'];

/** What a lifecycle row's figures are made of (test/bench/lifecycle). */
export interface Lifecycles {
  label: string;
  lifecycles: number;
  /** From the first pod created to the last release. */
  seconds: number;
  /** CPU ms of every stack process and the executables over the window. */
  cpu: CpuSample;
  /** The names in `cpu` the row is charged. */
  charged: string[];
  /** ms from pod created to pod removed, per lifecycle. */
  latencies: number[];
  /** ADDs made before the plugin was ready (netlease: no offer held for the pod yet). */
  unready: number;
  /** Lifecycles whose release was not seen by the deadline. */
  unreleased: number;
  /** netlease: how its leases were released. */
  releases?: Releases;
  /** netlease: what its lifecycles cost Temporal (their histories). */
  work?: WorkflowWork;
}

/** From each DEL's return to its lease's close, and who released it (the reason's prefix). */
export interface Releases {
  lagsMs: number[];
  by: Record<string, number>;
}

function mergedReleases(a?: Releases, b?: Releases): Releases | undefined {
  if (!a || !b) return a ?? b;
  const by = { ...a.by };
  for (const [source, n] of Object.entries(b.by)) by[source] = (by[source] ?? 0) + n;
  return { lagsMs: [...a.lagsMs, ...b.lagsMs], by };
}

/** One line: the release lag's p50 / p99 and the counts by source. */
export function releaseLine(r: Lifecycles): string {
  if (!r.releases) return '';
  const { lagsMs, by } = r.releases;
  const sources = Object.entries(by)
    .sort(([, x], [, y]) => y - x)
    .map(([source, n]) => `${source} ${n}`)
    .join(', ');
  const lag = `${ms(percentile(lagsMs, 0.5))} / ${ms(percentile(lagsMs, 0.99))}`;
  return `${r.label}: DEL to lease Released ms p50 / p99 ${lag} (n ${lagsMs.length}); released by ${sources}`;
}

/** The lifecycle rows and the stack's idle CPU, ms per second per process, measured before them. */
export interface LifecycleRows {
  rows: Lifecycles[];
  idle: CpuSample;
}

/** Two rounds of one row, summed. */
export function mergedLifecycles(a: Lifecycles, b: Lifecycles): Lifecycles {
  const cpu = { ...a.cpu };
  for (const [name, ms] of Object.entries(b.cpu)) cpu[name] = (cpu[name] ?? 0) + ms;
  return {
    ...a,
    lifecycles: a.lifecycles + b.lifecycles,
    seconds: a.seconds + b.seconds,
    cpu,
    latencies: [...a.latencies, ...b.latencies],
    unready: a.unready + b.unready,
    unreleased: a.unreleased + b.unreleased,
    releases: mergedReleases(a.releases, b.releases),
    work: mergedWork(a.work, b.work),
  };
}

const perLifecycle = (r: Lifecycles, names: string[]): number =>
  names.reduce((t, name) => t + (r.cpu[name] ?? 0), 0) / r.lifecycles;

/** CPU ms per lifecycle over the processes the row is charged. */
export const cpuPerLifecycle = (r: Lifecycles): number => perLifecycle(r, r.charged);

/** The Kubernetes API's share (apiserver + etcd) of a lifecycle. */
export const apiPerLifecycle = (r: Lifecycles): number => perLifecycle(r, API_PROCESSES);

export const lifecyclesPerSecond = (r: Lifecycles): number => r.lifecycles / r.seconds;

/** Where a lifecycle row's CPU went, ms per lifecycle: charged processes, then the others seen. */
export function lifecycleBreakdown(r: Lifecycles): string {
  const each = (names: string[]) => names.map((name) => `${name} ${ms(perLifecycle(r, [name]))}`).join(', ');
  const others = Object.keys(r.cpu).filter((name) => !r.charged.includes(name));
  const notCharged = others.length ? `; not charged: ${each(others)}` : '';
  return `${r.label}: ${each(r.charged)}${notCharged}`;
}

export function lifecycleTable(rows: Lifecycles[], lanes: number): string {
  const head = `| plugin | lifecycles/s @${lanes} | CPU ms per lifecycle | of which API | lifecycle p50 / p95 / p99 ms (n) |`;
  const lines = rows.map((r) =>
    [
      r.label,
      lifecyclesPerSecond(r).toFixed(1),
      ms(cpuPerLifecycle(r)),
      ms(apiPerLifecycle(r)),
      p50p95p99(r.latencies),
    ].join(' | '),
  );
  return [head, '|---|---|---|---|---|', ...lines.map((l) => `| ${l} |`)].join('\n');
}
