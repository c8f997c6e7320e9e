// The bench's output: one table (a row per plugin and mode), then the per-process CPU, the
// shim, memory, Temporal hops, and each target beside the figure it is about.
import { getHeapStatistics } from 'node:v8';
import { rssWithWanted, type OpenLeases } from './footprint';
import { leaseTasksPerLifecycle, workLine } from './workflow-work';
import {
  addsPerSecond,
  cpuBreakdown,
  cpuPerLifecycle,
  cpuPerPair,
  lifecycleBreakdown,
  lifecyclesPerSecond,
  lifecycleTable,
  ms,
  percentile,
  releaseLine,
  table,
  targetLines,
  type LifecycleRows,
  type Row,
  type Target,
} from './figures';

export interface Measured {
  /** A row per plugin and mode, ptp last. */
  rows: Row[];
  /** A whole-pod-lifecycle row per plugin, and the stack's idle CPU. */
  lives: LifecycleRows;
  /** Why there is no pre-produced row. */
  missing?: string;
  hops: string[];
  shimVersion: number;
  /** The shim's own CPU per call by verb, exec'd by a Go program as a runtime does. */
  shimFromGo: Record<string, number>;
  rss: { agent: number; control: number };
  open: OpenLeases;
  lanes: number;
}

/** The larger of the shim's ADD and DEL CPU when a Go runtime execs it. */
const shimFromGo = (m: Measured): number => Math.max(m.shimFromGo.ADD ?? NaN, m.shimFromGo.DEL ?? NaN);

/** The shim's CPU per ADD or DEL: the only executable a netlease row runs. */
function shimPerCall(row: Row | undefined): number {
  if (!row?.busy) return NaN;
  const calls = 2 * (row.seq.pairs + row.busy.pairs);
  return ((row.seq.cpu.executables ?? 0) + (row.busy.cpu.executables ?? 0)) / calls;
}

const most = (what: string, limit: number, unit: string, value: number | undefined): Target => ({
  what,
  limit: `≤ ${limit}${unit}`,
  value,
  ok: (v) => v <= limit,
});

function targets(m: Measured): Target[] {
  const rows = m.rows;
  const pre = rows.find((r) => r.label === 'netlease pre-produced');
  const cold = rows.find((r) => r.label === 'netlease cold');
  const ptp =
    rows.find((r) => r.label === 'netlease ptp pre-produced') ??
    rows.find((r) => r.label === 'netlease ptp (cold)');
  const at = (values: number[] | undefined, p: number) => (values ? percentile(values, p) : undefined);
  const busy = `@${m.lanes}`;
  const extrapolated = m.open.count < m.open.wanted ? ' (extrapolated)' : '';
  return [
    most('pre-produced ADD seq p50', 15, ' ms', at(pre?.seq.adds, 0.5)),
    most(`pre-produced ADD ${busy} p50`, 100, ' ms', at(pre?.busy?.adds, 0.5)),
    most(`pre-produced ADD ${busy} p99`, 400, ' ms', at(pre?.busy?.adds, 0.99)),
    {
      what: `pre-produced ADD/s ${busy} with DELs`,
      limit: '≥ 60',
      value: pre?.busy ? addsPerSecond(pre.busy) : undefined,
      ok: (v) => v >= 60,
    },
    most('pre-produced CPU per ADD+DEL', 30, ' ms', pre ? cpuPerPair(pre) : undefined),
    most('cold ADD seq p50', 60, ' ms', at(cold?.seq.adds, 0.5)),
    most(
      `ptp ADD seq p50 (${ptp?.label.replace('netlease ptp ', '') ?? 'none'})`,
      60,
      ' ms',
      at(ptp?.seq.adds, 0.5),
    ),
    most("shim CPU per ADD/DEL call, exec'd as a Go runtime does", 3, ' ms', shimFromGo(m)),
    most('node agent RSS', 150, ' MiB', m.rss.agent),
    most(
      `control worker RSS, ${m.open.wanted} more open leases${extrapolated}`,
      600,
      ' MiB',
      rssWithWanted(m.open),
    ),
  ];
}

const ratio = (what: string, limit: number, of: string, value: number, base: number): Target => ({
  what: `${what} ≤ ${limit} × ${of}`,
  limit: `(${ms(limit * base)})`,
  value,
  ok: (v) => v <= limit * base,
});

/** Issue 27's targets for the ADD rows: the one ADD path against the pre-produced one and host-local. */
function addTargets(m: Measured): Target[] {
  const seq = (label: string) => {
    const row = m.rows.find((r) => r.label === label);
    return row ? percentile(row.seq.adds, 0.5) : NaN;
  };
  const pre = seq('netlease pre-produced');
  return [
    ratio('cold ADD seq p50', 2, 'pre-produced p50', seq('netlease cold'), pre),
    ratio('pre-produced ADD seq p50', 1.5, "host-local's", pre, seq('host-local')),
    most('ptp cold ADD seq p50', 60, ' ms', seq('netlease ptp (cold)')),
  ];
}

/** Issue 27's targets for a whole lifecycle (the row with one control worker). */
function lifecycleTargets(lives: LifecycleRows['rows']): Target[] {
  const netlease = lives.find((r) => r.label.startsWith('netlease, 1 '));
  const peer = (label: string) => lives.find((r) => r.label === label);
  const whereabouts = peer('whereabouts');
  const hostLocal = peer('host-local');
  if (!netlease) return [];
  const cpu = cpuPerLifecycle(netlease);
  const rate = lifecyclesPerSecond(netlease);
  return [
    most('CPU per lifecycle', 120, ' ms', cpu),
    ...(whereabouts
      ? [ratio('CPU per lifecycle', 1, "whereabouts'", cpu, cpuPerLifecycle(whereabouts))]
      : []),
    ...(hostLocal
      ? [
          {
            what: "lifecycles/s @16 ≥ 0.5 × host-local's",
            limit: `(${(0.5 * lifecyclesPerSecond(hostLocal)).toFixed(1)})`,
            value: rate,
            ok: (v: number) => v >= 0.5 * lifecyclesPerSecond(hostLocal),
          },
        ]
      : []),
    most('lease workflow tasks per lifecycle', 5, '', netlease.work && leaseTasksPerLifecycle(netlease.work)),
  ];
}

/** The Temporal SDK's default workflow cache for this Node's heap limit (worker-options.js). */
function workflowCache(): string {
  const heapMiB = getHeapStatistics().heap_size_limit / 2 ** 20;
  const leases = Math.max(Math.floor((Math.max(heapMiB - 200, 0) * 600) / 1024), 10);
  return `the SDK caches up to ${leases} workflows by default (heap limit ${heapMiB.toFixed(0)} MiB)`;
}

/** The whole-pod-lifecycle rows, where their CPU went, and any lifecycle that did not go as a cluster's. */
export function lifecycleReport({ rows: lives, idle }: LifecycleRows, lanes: number): string {
  const idleLine = Object.entries(idle)
    .map(([name, perSecond]) => `${name} ${ms(perSecond)}`)
    .join(', ');
  const odd = lives.flatMap((r) => [
    r.unready ? `  ${r.label}: ${r.unready} ADDs before the agent held the pod's offer` : '',
    r.unreleased ? `  ${r.label}: ${r.unreleased} lifecycles not Released by the deadline` : '',
  ]);
  return [
    `Whole pod lifecycle (created + bound, ADD, Running, deleted, DEL, removed, released), ${lanes} in flight:`,
    lifecycleTable(lives, lanes),
    "CPU ms per lifecycle by process (charged: the executables, the plugin's processes, the Kubernetes API):",
    ...lives.map((r) => `  ${lifecycleBreakdown(r)}`),
    ...lives.map((r) => (r.releases ? `  ${releaseLine(r)}` : '')),
    'Temporal work per lifecycle (from the histories):',
    ...lives.map((r) => (r.work ? `  ${workLine(r.label, r.work)}` : '')),
    `  idle, CPU ms per second (in every row's window, charged with its process): ${idleLine}`,
    ...odd,
    'lifecycle targets (issue 27):',
    ...targetLines(lifecycleTargets(lives)),
  ]
    .filter((line) => line !== '')
    .join('\n');
}

export function report(m: Measured): string {
  const { rows } = m;
  const cold = rows.find((r) => r.label === 'netlease cold');
  return [
    table(rows, m.lanes),
    lifecycleReport(m.lives, m.lanes),
    m.missing ? `pre-produced: not available (${m.missing})` : '',
    'CPU ms per ADD+DEL by process (executables: the plugin binaries / shims this process ran):',
    ...rows.map((r) => `  ${cpuBreakdown(r)}`),
    `shim CPU per call, exec'd by this Node process (the fork's share counts, as for host-local): VERSION ${ms(m.shimVersion)} ms, ADD/DEL ${ms(shimPerCall(cold))} ms`,
    `shim CPU per call, exec'd by a Go program as containerd or CRI-O does (cni/shim BenchmarkCPUPerCall): ${
      Object.entries(m.shimFromGo)
        .map(([verb, cpu]) => `${verb} ${ms(cpu)} ms`)
        .join(', ') || 'not measured'
    }`,
    `RSS after the runs: node agent ${m.rss.agent.toFixed(0)} MiB, control worker ${m.rss.control.toFixed(0)} MiB`,
    `control worker RSS ${m.open.rssBefore.toFixed(0)} → ${m.open.rssAfter.toFixed(0)} MiB with ${m.open.count} more open leases (cold ADDs, no DEL): ${(m.open.perLeaseMiB * 1024).toFixed(0)} KiB per lease; ${workflowCache()}`,
    'Temporal hops (events the call added to each workflow history; timeline in ms from the call):',
    ...m.hops.map((h) => `  ${h}`),
    'targets (2-core machine):',
    ...targetLines(targets(m)),
    'ADD targets (issue 27):',
    ...targetLines(addTargets(m)),
  ]
    .filter((line) => line !== '')
    .join('\n');
}
