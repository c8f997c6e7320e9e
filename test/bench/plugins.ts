// The plugins under test, each called the way a runtime calls it: its executable with the CNI_*
// environment and the network config on stdin. Each row names the long-lived processes whose
// CPU it costs (the executables' own CPU is counted from this process's waited-for children).
import { randomBytes, randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { SHIM } from '../../tools/cni-dir';
import { runToEnd } from '../../tools/processes';
import { programPath } from '../../tools/programs';
import { NETWORK, NODE, POOL, TASK_QUEUE, type BenchStack } from './stack';

export interface BenchPod {
  uid: string;
  name: string;
  namespace: string;
  containerId: string;
  netns: string;
}

export interface Plugin {
  label: string;
  /** Long-lived processes whose CPU an ADD+DEL of this row costs, by name. */
  involved: Record<string, number>;
  nextPod(): BenchPod;
  call(command: 'ADD' | 'DEL', pod: BenchPod): Promise<void>;
}

export function freshPod(namespace = 'bench'): BenchPod {
  const containerId = randomBytes(32).toString('hex');
  const name = `p-${containerId.slice(0, 10)}`;
  return { uid: randomUUID(), name, namespace, containerId, netns: `/var/run/netns/${name}` };
}

/** The next of a fixed set of pods. */
export function takeFrom(pods: BenchPod[]): () => BenchPod {
  return () => {
    const pod = pods.shift();
    if (!pod) throw new Error('out of prepared pods');
    return pod;
  };
}

/** One CNI call of `executable`; a non-zero exit throws with its output. */
export async function cniCall(executable: string, command: string, pod: BenchPod, stdin: object) {
  const env = {
    PATH: process.env.PATH,
    CNI_COMMAND: command,
    CNI_CONTAINERID: pod.containerId,
    CNI_NETNS: pod.netns,
    CNI_IFNAME: 'eth0',
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${pod.namespace};K8S_POD_NAME=${pod.name};K8S_POD_UID=${pod.uid}`,
    CNI_PATH: dirname(executable),
  };
  const out = await runToEnd(executable, [], { env, input: JSON.stringify(stdin) });
  if (out.exitCode !== 0)
    throw new Error(`${command} ${executable} exit ${out.exitCode}: ${out.stdout}${out.stderr}`);
}

const plugin = (label: string, exe: string, stdin: object, involved: Record<string, number>): Plugin => ({
  label,
  involved,
  nextPod: () => freshPod(),
  call: (command, pod) => cniCall(exe, command, pod, stdin),
});

export function hostLocal(dir: string): Plugin {
  const stdin = {
    cniVersion: '1.0.0',
    name: 'bench-host-local',
    type: 'bridge',
    ipam: { type: 'host-local', ranges: [[{ subnet: '198.19.0.0/17' }]], dataDir: join(dir, 'host-local') },
  };
  return plugin('host-local', programPath('host-local'), stdin, {});
}

export function whereabouts(stack: BenchStack): Plugin {
  const kubernetes = { kubeconfig: stack.kube.kubeconfig };
  // Without a flat file whereabouts refuses the call: this one only names the datastore.
  const flat = join(stack.dir, 'whereabouts.conf');
  writeFileSync(flat, JSON.stringify({ datastore: 'kubernetes', kubernetes, log_level: 'error' }));
  const stdin = {
    cniVersion: '1.0.0',
    name: 'bench-whereabouts',
    type: 'bridge',
    ipam: { type: 'whereabouts', range: '198.19.128.0/17', configuration_path: flat, kubernetes },
  };
  const { apiserver, etcd } = stack.pids();
  return plugin('whereabouts', programPath('whereabouts'), stdin, { apiserver, etcd });
}

/** bin/netlease (the static shim) with the bench's agent; `mode` ptp also configures the pod. */
export function netleaseConf(stack: BenchStack, mode: 'ipam' | 'ptp'): object {
  return {
    cniVersion: '1.1.0',
    name: mode === 'ipam' ? NETWORK : 'bench-ptp',
    type: 'netlease',
    pool: POOL,
    mode,
    nodeName: NODE,
    temporal: { address: stack.temporal.address, taskQueue: TASK_QUEUE },
    timeoutSeconds: 120,
    agentSocket: stack.agentSocket,
    deleteQueue: stack.deleteQueue,
  };
}

/** Cold: pod UIDs nobody has seen, so each ADD starts its lease and produces its addresses. */
export function netleaseCold(stack: BenchStack): Plugin {
  return plugin('netlease cold', SHIM, netleaseConf(stack, 'ipam'), stack.pids());
}

/** Pre-produced: ADDs for pods whose leases the agent already produced, taken in order. */
export function netleasePreProduced(stack: BenchStack, pods: BenchPod[]): Plugin {
  return {
    ...plugin('netlease pre-produced', SHIM, netleaseConf(stack, 'ipam'), stack.pids()),
    nextPod: takeFrom([...pods]),
  };
}
