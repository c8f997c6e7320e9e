// DELs that could not be applied yet: queued by the static shim while the node agent was down, or
// by the agent while Temporal was unreachable. One durable file per DEL, named by time so they are
// applied in order.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { durableFiles, readDurableAs, removeDurably, writeDurably } from '../../storage/durable-files';

/**
 * Text the shim can send: it passes bytes, which the agent decodes as UTF-8 (U+FFFD for what is
 * not), so a lone surrogate comes only from a \uD800 escape in a request it did not make; and an
 * environment variable, a C string, holds no NUL. Such text would reach workflow ids and the
 * kernel as something else than the agent read (found by issue 18's fuzzing).
 */
const ShimText = z
  .string()
  .refine((text) => !/\p{Cs}/u.test(text), 'a lone surrogate: not text the shim sends');
const EnvValue = ShimText.refine((text) => !text.includes('\0'), 'a NUL: not in an environment variable');

export const QueuedCallSchema = z.object({ env: z.record(z.string(), EnvValue), stdin: ShimText });
export type QueuedCall = z.infer<typeof QueuedCallSchema>;

export async function enqueueDelete(dir: string, call: QueuedCall): Promise<void> {
  const nanos = process.hrtime.bigint() + BigInt(Date.now()) * 1_000_000n;
  const name = `${nanos.toString().padStart(20, '0')}-${randomBytes(6).toString('hex')}.json`;
  await writeDurably(dir, name, JSON.stringify(call));
}

/** What applying a queued DEL came to: done (or never possible), or to be tried again later. */
export type Applied = 'done' | 'later';

export interface Drained {
  applied: number;
  kept: number;
  dropped: string[];
  /** Files that could not be removed (applied or dropped all the same): they never block the rest. */
  stuck: Array<{ name: string; error: string }>;
}

/** Applies the queue in order; a DEL that must wait stops the run (later ones wait behind it). */
export async function drainDeletes(
  dir: string,
  apply: (call: QueuedCall) => Promise<Applied>,
): Promise<Drained> {
  const names = await durableFiles(dir, '.json');
  const drained: Drained = { applied: 0, kept: 0, dropped: [], stuck: [] };
  for (const [index, name] of names.entries()) {
    const call = await readDurableAs(dir, name, QueuedCallSchema);
    if (!call)
      drained.dropped.push(name); // unreadable: it can never be applied
    else if ((await apply(call)) === 'later') {
      drained.kept = names.length - index;
      return drained;
    } else drained.applied++;
    // An applied DEL left on disk is applied again next time, which is a no-op.
    await removeDurably(dir, name).catch((err: unknown) =>
      drained.stuck.push({ name, error: err instanceof Error ? err.message : String(err) }),
    );
  }
  return drained;
}
