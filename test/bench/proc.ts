// CPU time and resident memory of processes, from /proc: the bench's only meters.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** Fields of /proc/<pid>/stat after the command name: [0] is field 3 (state). */
function statFields(pid: number | 'self'): number[] {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return text
    .slice(text.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
}

const ticksToMs = (ticks: number): number => (ticks * 1000) / CLK_TCK;

/** utime + stime of a running process, in ms. */
export function cpuMs(pid: number): number {
  const f = statFields(pid);
  return ticksToMs((f[11] ?? 0) + (f[12] ?? 0));
}

/** The PIDs whose parent is `pid`, read from /proc (a child gone meanwhile is skipped). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (statFields(Number(entry))[1] === pid) children.push(Number(entry));
    } catch {
      // exited between the listing and the read
    }
  }
  return children;
}

/**
 * A server that forks a process per connection (PostgreSQL): its own CPU, that of the children
 * it has waited for (cutime + cstime), and that of its live children.
 */
export function processTreeCpuMs(pid: number): number {
  const f = statFields(pid);
  const own = ticksToMs((f[11] ?? 0) + (f[12] ?? 0) + (f[13] ?? 0) + (f[14] ?? 0));
  return childrenOf(pid).reduce((sum, child) => {
    try {
      return sum + cpuMs(child);
    } catch {
      return sum;
    }
  }, own);
}

/** cutime + cstime of this process: the CPU of every child it has waited for (the executables). */
export function waitedChildrenCpuMs(): number {
  const f = statFields('self');
  return ticksToMs((f[13] ?? 0) + (f[14] ?? 0));
}

export function rssMiB(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? NaN) / 1024;
}

/** CPU ms of named long-lived processes plus `executables` (waited-for children), at one instant. */
export type CpuSample = Record<string, number>;

/** Named processes whose CPU is their tree's (processTreeCpuMs): a process per connection. */
export const TREE_PROCESSES = ['postgres'];

export function sampleCpu(pids: Record<string, number>): CpuSample {
  const sample: CpuSample = { executables: waitedChildrenCpuMs() };
  for (const [name, pid] of Object.entries(pids))
    sample[name] = TREE_PROCESSES.includes(name) ? processTreeCpuMs(pid) : cpuMs(pid);
  return sample;
}

/** Per-name CPU ms spent between two samples. */
export function cpuSpent(before: CpuSample, after: CpuSample): CpuSample {
  return Object.fromEntries(Object.entries(after).map(([name, ms]) => [name, ms - (before[name] ?? 0)]));
}

export const totalMs = (spent: CpuSample): number => Object.values(spent).reduce((a, b) => a + b, 0);
