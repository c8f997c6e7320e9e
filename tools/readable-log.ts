// `npm start` shows its workers' JSON log lines as one short human line each:
// `20:01:02 node-agent info  cni call verb=ADD code=0 durationMs=41 pod=default/demo ...`.
// Lines that are not JSON pass through unchanged. Production reads the JSON itself.
import type { SpawnOptions } from 'node:child_process';
import { createInterface } from 'node:readline';
import { startTracked, type Tracked } from './processes';

const SKIPPED = new Set([
  'level',
  'time',
  'proc',
  'msg',
  'sdk',
  'sdkComponent',
  'workflowRunId',
  'activityId',
]);

export function readableLine(line: string): string {
  let event: Record<string, unknown>;
  try {
    event = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (typeof event !== 'object' || event === null || typeof event.msg !== 'string') return line;
  const time = typeof event.time === 'string' ? event.time.slice(11, 19) : '';
  const fields = Object.entries(event)
    .filter(([key]) => !SKIPPED.has(key))
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ');
  return `${time} ${String(event.proc ?? '')} ${String(event.level ?? '').padEnd(5)} ${event.msg}${fields ? ` ${fields}` : ''}`;
}

/** startTracked with the child's stdout rendered by readableLine (stderr passes through). */
export function startReadable(command: string, args: string[], options: SpawnOptions = {}): Tracked {
  const tracked = startTracked(command, args, { ...options, stdio: ['ignore', 'pipe', 'inherit'] });
  const stdout = tracked.child.stdout;
  if (stdout) createInterface({ input: stdout }).on('line', (line) => console.log(readableLine(line)));
  return tracked;
}
