// ptp mode: ADD and DEL through the static shim, the node agent process making the veth pair,
// addresses and routes; each pod in a fresh network namespace made here, host ends in the
// agent's host namespace (also the bench's). Cold: every pod is new to netlease.
import { SHIM } from '../../tools/cni-dir';
import { makeNetns } from '../harness/netns';
import { cniCall, freshPod, netleaseConf, takeFrom, type BenchPod, type Plugin } from './plugins';
import type { BenchStack } from './stack';

/** A ptp row over `pods` pods, each with its own network namespace (removed with deleteAllNetns). */
export async function ptpPlugin(stack: BenchStack, pods: number): Promise<Plugin> {
  const made: BenchPod[] = [];
  for (let i = 0; i < pods; i++) made.push({ ...freshPod(), netns: (await makeNetns('bench-pod')).path });
  const conf = netleaseConf(stack, 'ptp');
  return {
    label: 'netlease ptp (cold)',
    involved: stack.pids(),
    nextPod: takeFrom(made),
    call: (command, pod) => cniCall(SHIM, command, pod, conf),
  };
}
