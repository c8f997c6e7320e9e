// A pause between two activation steps, named by NETLEASE_DATAPLANE_PAUSE_AFTER, so a test can
// kill the node agent at an exact point of an activation, or (with NETLEASE_DATAPLANE_PAUSE_DIR)
// hold it there and let it go on. Unset (always, outside tests): no-op.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const PAUSE_ENV = 'NETLEASE_DATAPLANE_PAUSE_AFTER';
/**
 * A directory: a pause writes a file `<step>-<n>` there and lasts until that file is removed, so a
 * test sees where an activation waits and decides when it goes on.
 */
export const PAUSE_DIR_ENV = 'NETLEASE_DATAPLANE_PAUSE_DIR';
const LONGEST_PAUSE_MS = 10 * 60_000;
const GATE_POLL_MS = 50;

let pauses = 0;

/** Pauses after `step` when asked to; `stop` ends the pause at once (the activation was stopped). */
export async function pauseAfter(step: string, stop?: AbortSignal): Promise<void> {
  if (process.env[PAUSE_ENV] !== step) return;
  // One JSON line like the agent's own log (kernel/ stands below observability/).
  const msg = `paused after ${step} (${PAUSE_ENV})`;
  console.log(JSON.stringify({ level: 'warn', time: new Date().toISOString(), proc: 'node-agent', msg }));
  const dir = process.env[PAUSE_DIR_ENV];
  const until = AbortSignal.any([AbortSignal.timeout(LONGEST_PAUSE_MS), ...(stop ? [stop] : [])]);
  if (!dir) return void (await sleep(LONGEST_PAUSE_MS, undefined, { signal: until }).catch(() => undefined));
  mkdirSync(dir, { recursive: true });
  const gate = join(dir, `${step}-${++pauses}`);
  writeFileSync(gate, String(process.pid));
  while (existsSync(gate) && !until.aborted)
    await sleep(GATE_POLL_MS, undefined, { signal: until }).catch(() => undefined);
}
