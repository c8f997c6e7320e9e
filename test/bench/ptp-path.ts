// ptp mode: ADD and DEL through the static shim, a node agent process making the veth pair,
// addresses and routes; each pod in a fresh network namespace made here, host ends in the
// agents' host namespace (also the bench's). Cold: every pod is new to netlease. Pre-produced:
// pods bound to the ptp node, whose agent answers the first ADD from its offer.
import { SHIM } from '../../tools/cni-dir';
import { makeNetns } from '../harness/netns';
import { cniCall, freshPod, netleaseConf, takeFrom, type BenchPod, type Plugin } from './plugins';
import { PTP_NETWORK, PTP_NODE, type BenchStack } from './stack';

const withNetns = async (pods: BenchPod[]): Promise<BenchPod[]> => {
  const made: BenchPod[] = [];
  for (const pod of pods) made.push({ ...pod, netns: (await makeNetns('bench-pod')).path });
  return made;
};

/** A ptp row over `pods` new pods, each with its own network namespace (removed with deleteAllNetns). */
export async function ptpPlugin(stack: BenchStack, pods: number): Promise<Plugin> {
  const made = await withNetns(Array.from({ length: pods }, () => freshPod()));
  const conf = netleaseConf(stack, 'ptp');
  return {
    label: 'netlease ptp (cold)',
    involved: stack.pids(),
    nextPod: takeFrom(made),
    call: (command, pod) => cniCall(SHIM, command, pod, conf),
  };
}

/** A ptp row over pods the ptp node's agent pre-produced and offered. */
export async function ptpPreProducedPlugin(stack: BenchStack, pods: BenchPod[]): Promise<Plugin | undefined> {
  if (!stack.ptp) return undefined;
  const { agentSocket, deleteQueue, agent } = stack.ptp;
  const conf = {
    ...netleaseConf(stack, 'ptp'),
    name: PTP_NETWORK,
    nodeName: PTP_NODE,
    agentSocket,
    deleteQueue,
  };
  return {
    label: 'netlease ptp pre-produced',
    involved: { ...stack.pids(), agent: agent.pid },
    nextPod: takeFrom(await withNetns(pods)),
    call: (command, pod) => cniCall(SHIM, command, pod, conf),
  };
}
