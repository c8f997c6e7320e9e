// Child processes we start: tracked by PID, stopped by PID, waited on with a deadline.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';

export interface Tracked {
  pid: number;
  child: ChildProcess;
  exited: Promise<number | null>;
}

export function startTracked(command: string, args: string[], options: SpawnOptions = {}): Tracked {
  const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit'], ...options });
  if (child.pid === undefined) throw new Error(`could not start ${command}`);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { pid: child.pid, child, exited };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export interface Finished {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end (stdin from `input`, empty if none), collecting its output. */
export function runToEnd(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; input?: string } = {},
): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: options.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (exitCode) => resolve({ exitCode, stdout, stderr }));
    child.stdin?.end(options.input ?? '');
  });
}

/** SIGTERM, then SIGKILL if it has not exited within `graceMs`. Waits for the PID to be gone. */
export async function stopPid(pid: number, graceMs = 10000): Promise<void> {
  if (!isAlive(pid)) return;
  process.kill(pid, 'SIGTERM');
  if (await waitFor(() => !isAlive(pid), graceMs)) return;
  process.kill(pid, 'SIGKILL');
  await waitFor(() => !isAlive(pid), 5000);
}

/** Polls `predicate` until it holds or the deadline passes; returns whether it held. */
export async function waitFor(predicate: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 50) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

export { freePort } from '../observability/ports';

/**
 * Stops processes a previous run recorded in `pidFile` and left behind (a killed test run or
 * `npm start`), checking each PID's command line so a reused PID is never touched.
 */
export async function stopLeftovers(
  pidFile: string,
  pattern = /temporal|etcd|kube-apiserver|control\.js|node-agent\.js/,
): Promise<void> {
  if (!existsSync(pidFile)) return;
  const recorded = JSON.parse(readFileSync(pidFile, 'utf8')) as { pids?: number[] } | number[];
  const pids = Array.isArray(recorded) ? recorded : (recorded.pids ?? []);
  for (const pid of pids) {
    const cmdline = isAlive(pid) ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : '';
    if (pattern.test(cmdline)) {
      console.log(`netlease: stopping pid ${pid} left by a previous run`);
      await stopPid(pid);
    }
  }
  rmSync(pidFile, { force: true });
}
