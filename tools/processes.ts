// Child processes we start: tracked by PID, stopped by PID, waited on with a deadline.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { z } from 'zod';

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
  /** Killed (SIGKILL) at `timeoutMs`. */
  timedOut?: boolean;
}

/**
 * Runs a program to its end (stdin from `input`, empty if none), collecting its output; with
 * `timeoutMs`, a program still running then is killed by its PID and the result says `timedOut`.
 */
export function runToEnd(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; input?: string | Uint8Array; timeoutMs?: number; cwd?: string } = {},
): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const { env, cwd } = options;
    const child = spawn(command, args, { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    // Bytes, decoded at the end: a character split between two chunks stays whole.
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let timedOut = false;
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            child.kill('SIGKILL');
          }, options.timeoutMs);
    child.stdout?.on('data', (d: Buffer) => stdout.push(d));
    child.stderr?.on('data', (d: Buffer) => stderr.push(d));
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (exitCode) => {
      clearTimeout(timer);
      const [out, err] = [Buffer.concat(stdout).toString(), Buffer.concat(stderr).toString()];
      resolve({ exitCode, stdout: out, stderr: err, ...(timedOut ? { timedOut } : {}) });
    });
    // A program that exits without reading its input breaks the pipe: its exit status tells.
    child.stdin?.on('error', () => undefined);
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

export { freePort, freePortIn } from '../observability/ports';

/** A process's command line as /proc shows it (arguments NUL-separated); '' when it is gone. */
export function cmdlineOf(pid: number | 'self'): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

/** A process that records its children: its PID with its command line, to tell a reused PID. */
export const ProcessRecordSchema = z.object({ pid: z.number().int().positive(), cmdline: z.string() });
export type ProcessRecord = z.infer<typeof ProcessRecordSchema>;

/** A PID file: the PIDs to stop (a bare array in older files) and who wrote them. */
const PidFileSchema = z.union([
  z.array(z.number()).transform((pids) => ({ pids, launcher: undefined })),
  z.object({ pids: z.array(z.number()).default([]), launcher: ProcessRecordSchema.optional() }),
]);

function readPidFile(pidFile: string): z.infer<typeof PidFileSchema> {
  if (!existsSync(pidFile)) return { pids: [], launcher: undefined };
  const parsed = PidFileSchema.safeParse(JSON.parse(readFileSync(pidFile, 'utf8')));
  if (!parsed.success) throw new Error(`${pidFile}: not a PID file; remove it if no run is going on`);
  return parsed.data;
}

/** This process, as `runningLauncher` recognises it. */
export const thisProcess = (): ProcessRecord => ({ pid: process.pid, cmdline: cmdlineOf('self') });

/**
 * The launcher recorded in `pidFile` if it still runs: its PID alive with the command line it
 * recorded (a PID reused by another program is not it). undefined: none, or a stale record.
 */
export function runningLauncher(pidFile: string): ProcessRecord | undefined {
  const { launcher } = readPidFile(pidFile);
  if (!launcher || launcher.pid === process.pid) return undefined;
  return isRunning(launcher) ? launcher : undefined;
}

/** The recorded process still runs: its PID alive with the command line it had (not a reuse). */
export const isRunning = (record: ProcessRecord): boolean =>
  isAlive(record.pid) && cmdlineOf(record.pid) === record.cmdline;

/**
 * Stops processes a previous run recorded in `pidFile` and left behind (a killed test run or
 * `npm start`), checking each PID's command line so a reused PID is never touched.
 */
export async function stopLeftovers(
  pidFile: string,
  pattern = /temporal|etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|containerd|control\.js|node-agent\.js/,
): Promise<void> {
  if (!existsSync(pidFile)) return;
  for (const pid of readPidFile(pidFile).pids) {
    const cmdline = isAlive(pid) ? cmdlineOf(pid) : '';
    if (pattern.test(cmdline)) {
      console.log(`netlease: stopping pid ${pid} left by a previous run`);
      await stopPid(pid);
    }
  }
  rmSync(pidFile, { force: true });
}
