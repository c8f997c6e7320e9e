// The control worker as its own process (`node dist/worker/control/control.js --config <file>`, with
// the flags and environment a Deployment gives it), tracked by PID, its output kept: the soak and
// the two-control-workers test start it here.
import { writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { z } from 'zod';
import { NetleaseConfigSchema } from '../../domain/config';
import { startTracked, waitFor, type Tracked } from '../../tools/processes';
import { CONTROL_WORKER_NODE_FLAGS, PROCESS_ENV } from '../../worker/process-flags';

export const CONTROL_ENTRY = join(__dirname, '..', '..', 'worker', 'control', 'control.js');

/** What it printed is kept up to this many characters (the newest). */
const KEPT_OUTPUT = 262_144;

export interface ControlProcess extends Tracked {
  /** The SDK's default worker identity, as histories record it (`<pid>@<host>`). */
  identity: string;
  /** The newest of what it printed. */
  output(): string;
}

/**
 * Writes `config` to `file` and starts the process; `onOutput` sees each chunk it prints; `env`
 * adds to its environment (a test-only pause point).
 */
export function startControlProcess(
  config: z.input<typeof NetleaseConfigSchema>,
  file: string,
  onOutput: (chunk: Buffer) => void = () => undefined,
  env: Record<string, string> = {},
): ControlProcess {
  writeFileSync(file, JSON.stringify(NetleaseConfigSchema.parse(config)));
  const tracked = startTracked(
    process.execPath,
    [...CONTROL_WORKER_NODE_FLAGS, CONTROL_ENTRY, '--config', file],
    {
      env: { ...process.env, ...PROCESS_ENV, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let text = '';
  for (const stream of [tracked.child.stdout, tracked.child.stderr])
    stream?.on('data', (chunk: Buffer) => {
      text = (text + chunk.toString()).slice(-KEPT_OUTPUT);
      onOutput(chunk);
    });
  // Its exit counts once its output is read to the end ('close', not 'exit'): a test reads the
  // last line it wrote (the field a refused config names) right after it exited.
  const exited = new Promise<number | null>((resolve) =>
    tracked.child.once('close', (code) => resolve(code)),
  );
  return { ...tracked, exited, identity: `${tracked.pid}@${hostname()}`, output: () => text };
}

/** Until it logged that it started (log level info or lower); throws if it exits or the deadline passes. */
export async function untilControlStarted(control: ControlProcess, timeoutMs = 60_000): Promise<void> {
  let exited = false;
  void control.exited.then(() => (exited = true));
  const started = () => control.output().includes('"msg":"control worker started"');
  await waitFor(() => exited || started(), timeoutMs, 100);
  if (!started())
    throw new Error(`control worker ${control.pid} did not start: ${control.output().slice(-2000)}`);
}
