// DELs that could not be applied yet: queued by the static shim while the node agent was down, or
// by the agent while Temporal was unreachable. One file per DEL, written whole (temporary name,
// fsync, rename, fsync of the directory), named by time so they are applied in order.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';

export const QueuedCallSchema = z.object({ env: z.record(z.string(), z.string()), stdin: z.string() });
export type QueuedCall = z.infer<typeof QueuedCallSchema>;

async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export async function enqueueDelete(dir: string, call: QueuedCall): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const nanos = process.hrtime.bigint() + BigInt(Date.now()) * 1_000_000n;
  const name = `${nanos.toString().padStart(20, '0')}-${randomBytes(6).toString('hex')}.json`;
  const tmp = join(dir, `.${name}.tmp`);
  const file = await open(tmp, 'wx', 0o600);
  try {
    await file.writeFile(JSON.stringify(call));
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(tmp, join(dir, name));
  await syncDir(dir);
}

/** What applying a queued DEL came to: done (or never possible), or to be tried again later. */
export type Applied = 'done' | 'later';

export interface Drained {
  applied: number;
  kept: number;
  dropped: string[];
}

/** Applies the queue in order; a DEL that must wait stops the run (later ones wait behind it). */
export async function drainDeletes(
  dir: string,
  apply: (call: QueuedCall) => Promise<Applied>,
): Promise<Drained> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.json')).sort();
  const drained: Drained = { applied: 0, kept: 0, dropped: [] };
  for (const [index, name] of names.entries()) {
    const path = join(dir, name);
    const parsed = QueuedCallSchema.safeParse(JSON.parse(await readFile(path, 'utf8').catch(() => 'null')));
    if (!parsed.success)
      drained.dropped.push(name); // unreadable: it can never be applied
    else if ((await apply(parsed.data)) === 'later') {
      drained.kept = names.length - index;
      return drained;
    } else drained.applied++;
    await rm(path, { force: true });
    await syncDir(dir);
  }
  return drained;
}
