// Runs the real CNI executable (bin/netlease) as the runtime would: env + stdin → stdout.
import { spawn } from 'node:child_process';
import { dirname } from 'node:path';
import { SHIM } from '../../tools/cni-dir';

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

export interface ShimOutcome {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  json?: Record<string, unknown>;
}

export function cniArgs(args: Record<string, string>): string {
  return Object.entries(args)
    .map(([k, v]) => `${k}=${v}`)
    .join(';');
}

export function runShim(call: ShimCall): Promise<ShimOutcome> {
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
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SHIM], { env: clean, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (exitCode) => {
      let json: Record<string, unknown> | undefined;
      try {
        json = stdout.trim() ? (JSON.parse(stdout) as Record<string, unknown>) : undefined;
      } catch {
        json = undefined;
      }
      resolve({ exitCode, stdout, stderr, json });
    });
    child.stdin.end(typeof call.stdin === 'string' ? call.stdin : JSON.stringify(call.stdin));
  });
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
