// Runs the real CNI executable (bin/netlease, the static shim) as the runtime would: env + stdin →
// stdout. It reaches the test file's node agent through the network config's agentSocket.
import { dirname } from 'node:path';
import { SHIM } from '../../tools/cni-dir';
import { runToEnd, type Finished } from '../../tools/processes';

export interface ShimCall {
  command: string;
  containerId?: string;
  netns?: string;
  ifName?: string;
  args?: Record<string, string>;
  /** Network config object, or raw stdin text. */
  stdin: unknown;
  env?: Record<string, string | undefined>;
}

/** A bound pod, as a runtime names it in CNI_ARGS. */
export interface PodRef {
  namespace: string;
  name: string;
  uid: string;
}

/** The runtime's call for the pod's eth0 in its sandbox `ctr-<uid>`. */
export const podCall = (command: string, pod: PodRef, stdin: unknown): ShimCall => ({
  command,
  containerId: `ctr-${pod.uid}`,
  netns: `/var/run/netns/${pod.uid}`,
  ifName: 'eth0',
  args: { K8S_POD_NAMESPACE: pod.namespace, K8S_POD_NAME: pod.name, K8S_POD_UID: pod.uid },
  stdin,
});

export interface ShimOutcome extends Finished {
  json?: Record<string, unknown>;
}

export function cniArgs(args: Record<string, string>): string {
  return Object.entries(args)
    .map(([k, v]) => `${k}=${v}`)
    .join(';');
}

export async function runShim(call: ShimCall): Promise<ShimOutcome> {
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    CNI_COMMAND: call.command,
    CNI_CONTAINERID: call.containerId,
    CNI_NETNS: call.netns,
    CNI_IFNAME: call.ifName,
    CNI_ARGS: call.args ? cniArgs(call.args) : undefined,
    CNI_PATH: dirname(SHIM),
    ...call.env,
  };
  const clean = Object.fromEntries(
    Object.entries(env).filter(([, v]) => v !== undefined),
  ) as NodeJS.ProcessEnv;
  const input = typeof call.stdin === 'string' ? call.stdin : JSON.stringify(call.stdin);
  const outcome = await runToEnd(SHIM, [], { env: clean, input });
  return { ...outcome, json: parsedJson(outcome.stdout) };
}

function parsedJson(stdout: string): Record<string, unknown> | undefined {
  try {
    return stdout.trim() ? (JSON.parse(stdout) as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Runs `tasks` with at most `limit` in flight. */
export async function inBatches<T>(tasks: Array<() => Promise<T>>, limit: number): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, tasks.length) }, async () => {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await (tasks[index] as () => Promise<T>)();
    }
  });
  await Promise.all(lanes);
  return results;
}
