// The node agent when netlease runs as pods (NETLEASE_E2E_IN_CLUSTER=1): its DaemonSet pod on a
// node, read through the API as an operator would, and its process found through the node's
// containerd (the container's task), so a test can kill it as it kills the host process.
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { isNotFound, type CoreApi } from '../../kubernetes/kube';
import { RELEASE_NAMESPACE } from '../../tools/in-cluster';
import { isAlive, waitFor } from '../../tools/processes';
import type { Containerd } from '../../tools/containerd';
import { taskPid } from './real-node';
import { waitForValue } from './wait';

/** The agent container's process now, and the container and pod it is in. */
export interface AgentContainer {
  pid: number;
  containerId: string;
  podName: string;
}

const agentStatus = (pod: V1Pod): V1ContainerStatus | undefined =>
  pod.status?.containerStatuses?.find((c) => c.name === 'node-agent');

/** The agent DaemonSet's pod bound to `nodeName` (not being deleted), if any. */
export async function agentPodOf(core: CoreApi, nodeName: string): Promise<V1Pod | undefined> {
  const pods = await core.listNamespacedPod({
    namespace: RELEASE_NAMESPACE,
    labelSelector: 'app=netlease-node-agent',
    fieldSelector: `spec.nodeName=${nodeName}`,
  });
  return pods.items.find((p) => !p.metadata?.deletionTimestamp);
}

/** The running, ready agent container of the node, other than `not` (a container id). */
export async function readyAgent(
  core: CoreApi,
  ctr: Containerd['ctr'],
  nodeName: string,
  not?: AgentContainer,
  ms = 180_000,
): Promise<AgentContainer> {
  const ready = async (): Promise<AgentContainer | undefined> => {
    const pod = await agentPodOf(core, nodeName);
    const status = pod && agentStatus(pod);
    const containerId = status?.containerID?.replace(/^containerd:\/\//, '');
    if (!pod || !status?.ready || !status.state?.running || !containerId) return undefined;
    if (containerId === not?.containerId) return undefined;
    const pid = await taskPid(ctr, containerId).catch(() => undefined);
    return pid ? { pid, containerId, podName: pod.metadata?.name ?? '' } : undefined;
  };
  return waitForValue(ready, (a) => a !== undefined, ms, 500, `a ready node agent pod on ${nodeName}`).then(
    (a) => a as AgentContainer,
  );
}

/**
 * Kills the agent's process with `signal` and returns the signal it ended by, as the kubelet saw
 * it (the container's exit code 128 + signal number); undefined while nothing says.
 */
export async function killAgent(
  core: CoreApi,
  nodeName: string,
  agent: AgentContainer,
  signal: NodeJS.Signals,
): Promise<NodeJS.Signals | null> {
  process.kill(agent.pid, signal);
  if (!(await waitFor(() => !isAlive(agent.pid), 30_000, 100)))
    throw new Error(`the agent's process ${agent.pid} lived on after ${signal}`);
  const exit = async () => {
    const pod = await core
      .readNamespacedPod({ namespace: RELEASE_NAMESPACE, name: agent.podName })
      .catch((err) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
    const status = pod && agentStatus(pod);
    const ended = [status?.lastState?.terminated, status?.state?.terminated].find((t) =>
      t?.containerID?.endsWith(agent.containerId),
    );
    return ended?.exitCode;
  };
  const code = await waitForValue(
    exit,
    (c) => c !== undefined,
    60_000,
    200,
    `the kubelet's word on ${nodeName}'s agent`,
  );
  const signals: Record<number, NodeJS.Signals> = { 137: 'SIGKILL', 143: 'SIGTERM' };
  return code === undefined ? null : (signals[code] ?? null);
}
