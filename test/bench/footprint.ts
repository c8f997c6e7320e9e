// What netlease holds on to: the shim's CPU per call, the workers' resident memory, and the
// control worker's memory per open lease (N cold ADDs left open, RSS read before and after).
import { join } from 'node:path';
import { SHIM } from '../../tools/cni-dir';
import { runToEnd } from '../../tools/processes';
import { lanesUntil } from './phases';
import { freshPod, type Plugin } from './plugins';
import { rssMiB, waitedChildrenCpuMs } from './proc';

/** The shim's own CPU per call as a Go runtime (containerd, CRI-O) execs it: cni/shim's BenchmarkCPUPerCall. */
export async function shimCpuFromGo(calls: number): Promise<Record<string, number>> {
  const dir = join(__dirname, '..', '..', '..', 'cni', 'shim');
  const args = ['-C', dir, 'test', '-run', '^$', '-bench', 'CPUPerCall', '-benchtime', `${calls}x`];
  const out = await runToEnd('go', args, { env: { ...process.env, SHIM } });
  const perCall = [...out.stdout.matchAll(/CPUPerCall\/(\w+)-\d+\s.*?([\d.]+) cpu-ms\/call/g)];
  return Object.fromEntries(perCall.map((m) => [m[1] ?? '', Number(m[2])]));
}

/** CPU ms per VERSION call exec'd from this Node process (its fork's share counts): the shim alone. */
export async function shimVersionCpu(calls: number): Promise<number> {
  const before = waitedChildrenCpuMs();
  const env = { CNI_COMMAND: 'VERSION' };
  for (let i = 0; i < calls; i++) await runToEnd(SHIM, [], { env, input: '{"cniVersion":"1.1.0"}' });
  return (waitedChildrenCpuMs() - before) / calls;
}

export interface OpenLeases {
  wanted: number;
  /** Leases opened (fewer than wanted when the time budget ran out). */
  count: number;
  rssBefore: number;
  rssAfter: number;
  perLeaseMiB: number;
}

/** Up to `count` cold ADDs with no DEL, `lanes` in flight; the control worker's RSS before and after. */
/** The control worker's RSS with `wanted` more open leases: measured, or extrapolated if fewer opened. */
export const rssWithWanted = (o: OpenLeases): number => o.rssBefore + o.perLeaseMiB * o.wanted;

export async function openLeases(
  cold: Plugin,
  controlPid: number,
  count: number,
  lanes: number,
  budgetMs: number,
): Promise<OpenLeases> {
  const rssBefore = rssMiB(controlPid);
  const opened = await lanesUntil(count, lanes, budgetMs, () => cold.call('ADD', freshPod()));
  const rssAfter = rssMiB(controlPid);
  const perLeaseMiB = (rssAfter - rssBefore) / opened;
  return { wanted: count, count: opened, rssBefore, rssAfter, perLeaseMiB };
}
