// One measured phase of one plugin: ADD+DEL pairs one at a time, or `lanes` pairs in flight
// (each lane: ADD, then DEL of that container). ADD latency per call, wall time, CPU per process.
import { performance } from 'node:perf_hooks';
import { cpuSpent, sampleCpu, type CpuSample } from './proc';
import type { Plugin } from './plugins';

export interface PhaseResult {
  adds: number[];
  pairs: number;
  seconds: number;
  cpu: CpuSample;
}

export const emptyResult = (): PhaseResult => ({ adds: [], pairs: 0, seconds: 0, cpu: {} });

/** Sums two results of the same plugin and kind (rounds of the interleaving). */
export function merged(a: PhaseResult, b: PhaseResult): PhaseResult {
  const cpu = { ...a.cpu };
  for (const [name, ms] of Object.entries(b.cpu)) cpu[name] = (cpu[name] ?? 0) + ms;
  return { adds: [...a.adds, ...b.adds], pairs: a.pairs + b.pairs, seconds: a.seconds + b.seconds, cpu };
}

/** One ADD (timed) then its DEL. */
async function pair(plugin: Plugin): Promise<number> {
  const pod = plugin.nextPod();
  const started = performance.now();
  await plugin.call('ADD', pod);
  const latency = performance.now() - started;
  await plugin.call('DEL', pod);
  return latency;
}

async function measured(plugin: Plugin, body: (adds: number[]) => Promise<void>): Promise<PhaseResult> {
  const adds: number[] = [];
  const before = sampleCpu(plugin.involved);
  const started = performance.now();
  await body(adds);
  const seconds = (performance.now() - started) / 1000;
  const cpu = cpuSpent(before, sampleCpu(plugin.involved));
  return { adds, pairs: adds.length, seconds, cpu };
}

export function sequential(plugin: Plugin, count: number): Promise<PhaseResult> {
  return measured(plugin, async (adds) => {
    for (let i = 0; i < count; i++) adds.push(await pair(plugin));
  });
}

/** Runs `task` with `lanes` in flight until `count` ran or none starts after `budgetMs`; how many ran. */
export async function lanesUntil(
  count: number,
  lanes: number,
  budgetMs: number,
  task: () => Promise<void>,
): Promise<number> {
  const deadline = performance.now() + budgetMs;
  let started = 0;
  // A failed task stops the others starting, and its error is thrown once every lane is done: no
  // call is left running on a connection the caller closes next (the scale run's crash,
  // "Channel has been shut down" from a client's retry timer, which hid the error itself).
  const failures: unknown[] = [];
  const lane = async () => {
    while (failures.length === 0 && started < count && performance.now() < deadline) {
      started++;
      await task().catch((err: unknown) => void failures.push(err));
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  if (failures.length > 0) throw failures[0];
  return started;
}

/** `lanes` pairs in flight until `count` pairs are done or no new pair starts after `budgetMs`. */
export function inFlight(
  plugin: Plugin,
  count: number,
  lanes: number,
  budgetMs: number,
): Promise<PhaseResult> {
  return measured(plugin, async (adds) => {
    await lanesUntil(count, lanes, budgetMs, async () => void adds.push(await pair(plugin)));
  });
}
