// The ptp dataplane alone: activateAttachment / deactivateAttachment called directly (no Temporal),
// host ends in a namespace made here, one dual-stack pod. Prints mean wall ms, node-side CPU ms,
// children's CPU ms and processes spawned, per call. Root only.
//   node dist/test/bench/dataplane.js [iterations]   (NETLEASE_BENCH_TRACE=1 lists each command)
import { ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { createDataplaneActivities } from '../../activities/dataplane';
import type { AttachmentInput } from '../../domain/dataplane';
import { deleteAllNetns, makeNetns } from '../harness/netns';
import { waitedChildrenCpuMs } from './proc';

const ITERATIONS = Number(process.argv[2] ?? 50) || 50;
const WARM_UP = 3;
const TRACE = process.env.NETLEASE_BENCH_TRACE === '1';

/** Counts every process Node spawns (execFile goes through ChildProcess.prototype.spawn). */
function countSpawns(): () => number {
  type Spawn = (this: ChildProcess, options: { file: string; args: string[] }) => unknown;
  const proto = ChildProcess.prototype as unknown as { spawn: Spawn };
  const original = proto.spawn;
  let spawned = 0;
  proto.spawn = function (options) {
    spawned++;
    if (TRACE) console.log(`  exec: ${options.args.join(' ')}`);
    return original.call(this, options);
  };
  return () => spawned;
}

/** One call's cost. */
interface Sample {
  wallMs: number;
  cpuMs: number;
  childCpuMs: number;
  spawned: number;
}

async function measure(spawned: () => number, call: () => Promise<unknown>): Promise<Sample> {
  const [s0, c0, k0, t0] = [spawned(), process.cpuUsage(), waitedChildrenCpuMs(), performance.now()];
  await call();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  return {
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    childCpuMs: waitedChildrenCpuMs() - k0,
    spawned: spawned() - s0,
  };
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

function print(label: string, samples: Sample[]): void {
  const of = (key: keyof Sample) => samples.map((s) => s[key]);
  const wall = of('wallMs');
  console.log(
    `${label}: ${mean(wall).toFixed(1)} ms wall (median ${median(wall).toFixed(1)}), ` +
      `${mean(of('cpuMs')).toFixed(1)} ms node CPU, ${mean(of('childCpuMs')).toFixed(1)} ms children CPU, ` +
      `${mean(of('spawned')).toFixed(1)} processes`,
  );
}

function input(netns: string): AttachmentInput {
  const start = {
    podUid: 'bench-uid',
    podNamespace: 'bench',
    podName: 'bench',
    ifName: 'eth0',
    nodeName: 'bench-node',
    pool: 'bench',
    mode: 'ptp' as const,
  };
  return {
    leaseId: 'bench-lease',
    start,
    attachment: { containerId: 'bench-container', netns, ifName: 'eth0' },
    addresses: [
      { family: 4, address: '198.51.100.10', prefixLength: 24, gateway: '198.51.100.1' },
      { family: 6, address: '2001:db8::10', prefixLength: 64, gateway: '2001:db8::1' },
    ],
    routes: [
      { dst: '0.0.0.0/0', gw: '198.51.100.1' },
      { dst: '::/0', gw: '2001:db8::1' },
    ],
  };
}

const PHASES = ['activate', 're-activate', 'deactivate'] as const;

async function main(): Promise<void> {
  const spawned = countSpawns();
  const host = await makeNetns('bench-host');
  const pod = await makeNetns('bench-pod');
  const activities = createDataplaneActivities({ hostNetns: host.name });
  const attachment = input(pod.path);
  // activate: a fresh pod; re-activate: a retried activation, everything already there.
  const calls = {
    activate: () => activities.activateAttachment(attachment),
    're-activate': () => activities.activateAttachment(attachment),
    deactivate: () => activities.deactivateAttachment(attachment),
  };
  const samples = new Map(PHASES.map((phase) => [phase, [] as Sample[]]));
  try {
    for (let i = 0; i < WARM_UP + ITERATIONS; i++) {
      for (const phase of PHASES) {
        if (TRACE) console.log(phase);
        const sample = await measure(spawned, calls[phase]);
        if (i >= WARM_UP) samples.get(phase)?.push(sample);
      }
    }
  } finally {
    await deleteAllNetns();
  }
  console.log(`${ITERATIONS} iterations (after ${WARM_UP} warm-up), dual-stack pod, host in a netns`);
  for (const phase of PHASES) print(phase.padEnd(11), samples.get(phase) ?? []);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
