// ptp figures: ADD and DEL through the shim with a real node agent, each pod in a fresh network
// namespace made here, host ends in a host namespace made here (removed at the end).
import { randomUUID } from 'node:crypto';
import type { TemporalConnection } from '../../domain/config';
import { deleteAllNetns, makeNetns, type TestNetns } from '../harness/netns';
import { runNodeAgent } from '../harness/node-agent';
import { runShim, type ShimCall } from '../harness/shim';
import { p50p95 } from './figures';

const PODS = 20;

async function timed(call: ShimCall): Promise<number> {
  const started = Date.now();
  const outcome = await runShim(call);
  if (outcome.exitCode !== 0) throw new Error(`${call.command}: ${outcome.stdout}`);
  return Date.now() - started;
}

export async function benchPtp(temporal: TemporalConnection): Promise<void> {
  const host = await makeNetns('bench-host');
  const agent = await runNodeAgent('bench-ptp', host.name);
  try {
    const calls = (command: string, uid: string, pod: TestNetns): ShimCall => ({
      command,
      containerId: `c-${uid}`,
      netns: pod.path,
      ifName: 'eth0',
      args: { K8S_POD_UID: uid },
      stdin: {
        cniVersion: '1.1.0',
        name: 'bench-ptp',
        type: 'netlease',
        mode: 'ptp',
        nodeName: 'bench-ptp',
        temporal,
        timeoutSeconds: 300,
      },
    });
    const pods = await Promise.all(
      Array.from({ length: PODS }, async () => ({ uid: randomUUID(), pod: await makeNetns('bench-pod') })),
    );
    const adds: number[] = [];
    for (const { uid, pod } of pods) adds.push(await timed(calls('ADD', uid, pod)));
    const dels: number[] = [];
    for (const { uid, pod } of pods) dels.push(await timed(calls('DEL', uid, pod)));
    console.log(`ptp ADD sequential (${PODS}, veth + addresses + routes): ${p50p95(adds)}`);
    console.log(`ptp DEL sequential (${PODS}): ${p50p95(dels)}`);
  } finally {
    await agent.stop();
    await deleteAllNetns();
  }
}
