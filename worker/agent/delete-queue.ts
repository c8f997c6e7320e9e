// DELs that could not be applied yet: queued by the static shim while the node agent was down, or
// by the agent while Temporal was unreachable. One durable file per DEL, named by time (the oldest
// is tried first).
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { errorMessage } from '../../observability/log';
import { readDurableAs, removeDurably, sweptDurableFiles, writeDurably } from '../../storage/durable-files';

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

/**
 * "Later" answers in a row that end a round: Temporal itself away answers every DEL so, each
 * after the call's whole timeout; the next round comes in a few seconds anyway.
 */
export const LATER_IN_A_ROW_ENDS_ROUND = 3;

/** A queue file still under its temporary name after this long: its writer (shim or agent) died. */
export const STALE_TEMPORARY_MS = 60_000;

export interface Drained {
  applied: number;
  /** Left in the queue: to be applied later, unreadable for now, or not reached this round. */
  kept: number;
  dropped: string[];
  /** Files that could not be removed (applied or dropped all the same): they never block the rest. */
  stuck: Array<{ name: string; error: string }>;
  /** Files that could not be read this round (EIO, EMFILE...): kept, read again next round. */
  unreadable: Array<{ name: string; error: string }>;
  /** Temporaries of writers that died (never queued: their runtime was not told so), removed. */
  swept: string[];
}

/** A queued DEL's call, undefined when damaged, or the error of a read to try again next round. */
const readQueued = (dir: string, name: string) =>
  readDurableAs(dir, name, QueuedCallSchema).then(
    (call) => ({ call }),
    (err: unknown) => ({ error: errorMessage(err) }),
  );

/** The queue in the order it is tried: those that answered "later" before go last. */
function inTurn(listed: string[], waiting: Set<string>): string[] {
  for (const name of waiting) if (!listed.includes(name)) waiting.delete(name);
  return [...listed.filter((n) => !waiting.has(n)), ...listed.filter((n) => waiting.has(n))];
}

/**
 * Applies the queue, each DEL on its own: one that must wait is kept and the rest go on (DELs are
 * idempotent and independent, so their order does not matter). `waiting` holds the names that
 * answered "later" in an earlier round: they are tried after the others, so a few that keep
 * waiting never hold back the ones behind them when a round ends early; the drain updates it.
 */
export async function drainDeletes(
  dir: string,
  apply: (call: QueuedCall) => Promise<Applied>,
  waiting: Set<string> = new Set(),
): Promise<Drained> {
  const { files, swept } = await sweptDurableFiles(dir, '.json', STALE_TEMPORARY_MS);
  const names = inTurn(files, waiting);
  const drained: Drained = { applied: 0, kept: 0, dropped: [], stuck: [], unreadable: [], swept };
  let laterInARow = 0;
  for (const [index, name] of names.entries()) {
    if (laterInARow >= LATER_IN_A_ROW_ENDS_ROUND) {
      drained.kept += names.length - index;
      break;
    }
    const read = await readQueued(dir, name);
    if ('error' in read) {
      drained.unreadable.push({ name, error: read.error });
      drained.kept++;
      continue;
    }
    if (!read.call)
      drained.dropped.push(name); // damaged: it can never be applied
    else if ((await apply(read.call)) === 'later') {
      waiting.add(name);
      drained.kept++;
      laterInARow++;
      continue;
    } else drained.applied++;
    laterInARow = 0;
    waiting.delete(name);
    // An applied DEL left on disk is applied again next time, which is a no-op.
    await removeDurably(dir, name).catch((err: unknown) =>
      drained.stuck.push({ name, error: errorMessage(err) }),
    );
  }
  return drained;
}
