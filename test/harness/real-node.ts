// Reading a real node's runtime as an operator would without crictl: containerd's containers of a
// pod (by the CRI's labels), the sandbox's network namespace, and a task's PID.
import { z } from 'zod';
import { netnsOf, type Containerd } from '../../tools/containerd';

const InfoSchema = z.object({ ID: z.string(), Labels: z.record(z.string(), z.string()).default({}) });

export interface PodContainer {
  id: string;
  /** `sandbox` (the pause container) or `container`. */
  kind: string;
  /** The Kubernetes container's name; undefined for the sandbox. */
  name: string | undefined;
}

export async function containersOfPod(ctr: Containerd['ctr'], podUid: string): Promise<PodContainer[]> {
  const ids = (await ctr(['containers', 'list', '--quiet'])).split('\n').filter(Boolean);
  const found: PodContainer[] = [];
  for (const id of ids) {
    const info = await ctr(['containers', 'info', id]).catch((err: unknown) => {
      // Removed since the list (the kubelet tearing down another pod's sandbox): not this pod's now.
      if (err instanceof Error && /: not found$/.test(err.message)) return undefined;
      throw err;
    });
    if (info === undefined) continue;
    const { Labels: labels } = InfoSchema.parse(JSON.parse(info));
    if (labels['io.kubernetes.pod.uid'] !== podUid) continue;
    found.push({
      id,
      kind: labels['io.cri-containerd.kind'] ?? '',
      name: labels['io.kubernetes.container.name'],
    });
  }
  return found;
}

/** The pod's sandbox and the network namespace the CRI made for it (the CNI_NETNS of its ADD). */
export async function sandboxNetns(
  ctr: Containerd['ctr'],
  podUid: string,
): Promise<{ sandbox: string; netns: string }> {
  const sandboxes = (await containersOfPod(ctr, podUid)).filter((c) => c.kind === 'sandbox');
  if (sandboxes.length !== 1) throw new Error(`pod ${podUid} has ${sandboxes.length} sandboxes, not 1`);
  const sandbox = sandboxes[0]?.id ?? '';
  const netns = await netnsOf(ctr, sandbox);
  if (!netns) throw new Error(`sandbox ${sandbox} has no network namespace path`);
  return { sandbox, netns };
}

/** `ctr tasks list` (TASK PID STATUS): container id → [pid, status]. */
async function tasks(ctr: Containerd['ctr']): Promise<Map<string, [number, string]>> {
  const rows = (await ctr(['tasks', 'list'])).split('\n').slice(1);
  const cells = rows.map((line) => line.trim().split(/\s+/)).filter((row) => row.length === 3);
  return new Map(cells.map(([id, pid, status]) => [id ?? '', [Number(pid), status ?? '']]));
}

/** The PID of a running task. */
export async function taskPid(ctr: Containerd['ctr'], containerId: string): Promise<number> {
  const [pid, status] = (await tasks(ctr)).get(containerId) ?? [0, 'none'];
  if (status !== 'RUNNING' || pid <= 0) throw new Error(`task ${containerId} is ${status}, not RUNNING`);
  return pid;
}

/** The pod's containers (sandbox included) whose task still runs. */
export async function runningOfPod(ctr: Containerd['ctr'], podUid: string): Promise<string[]> {
  const running = await tasks(ctr);
  const ids = (await containersOfPod(ctr, podUid)).map((c) => c.id);
  return ids.filter((id) => running.get(id)?.[1] === 'RUNNING');
}
