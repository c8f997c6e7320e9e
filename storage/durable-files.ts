// Files on the node that must survive a crash (queued DELs, offers): each written whole under a
// temporary name, fsync'd, renamed into place, and the directory fsync'd, so after a crash a file
// is either absent or complete.
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export async function writeDurably(dir: string, name: string, content: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = join(dir, `.${name}.tmp`);
  const file = await open(tmp, 'w', 0o600);
  try {
    await file.writeFile(content);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(tmp, join(dir, name));
  await syncDir(dir);
}

export async function removeDurably(dir: string, name: string): Promise<void> {
  await rm(join(dir, name), { force: true });
  await syncDir(dir).catch(() => undefined); // the directory itself may be gone
}

/** Whether `name` is a complete file (not a temporary) with this suffix. */
export const isCompleteFile = (name: string, suffix: string): boolean =>
  name.endsWith(suffix) && !name.startsWith('.');

const isTemporary = (name: string): boolean => name.startsWith('.') && name.endsWith('.tmp');

/** The complete files of a directory (temporaries skipped), sorted by name; none if it is missing. */
export async function durableFiles(dir: string, suffix: string): Promise<string[]> {
  return (await sweptDurableFiles(dir, suffix, Infinity)).files;
}

/**
 * `durableFiles`, from the same listing removing the temporaries older than `staleAfterMs`: a
 * writer that died between writing and renaming left them (its caller was never told the file was
 * written), and nothing else ever removes them. A younger one may be a writer's still at work.
 */
export async function sweptDurableFiles(
  dir: string,
  suffix: string,
  staleAfterMs: number,
): Promise<{ files: string[]; swept: string[] }> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const swept: string[] = [];
  if (staleAfterMs !== Infinity)
    for (const name of names.filter(isTemporary)) {
      try {
        if (Date.now() - (await stat(join(dir, name))).mtimeMs < staleAfterMs) continue;
        await rm(join(dir, name));
        swept.push(name);
      } catch {
        // Renamed by its writer meanwhile, or not removable now: left for the next sweep.
      }
    }
  return { files: names.filter((n) => isCompleteFile(n, suffix)).sort(), swept };
}

/** Read errors no retry mends: the file is gone, or is a directory. */
const NEVER_READABLE = new Set<string | undefined>(['ENOENT', 'EISDIR']);

const codeOf = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | undefined)?.code;

/**
 * A file's JSON as `schema` reads it, or undefined when it never can be (damaged content, gone, a
 * directory). Any other read error (EIO, EMFILE, ENFILE, EAGAIN, EACCES...) is thrown: the file
 * may read fine later, and must not be taken for damaged.
 */
export async function readDurableAs<T>(
  dir: string,
  name: string,
  schema: { parse(value: unknown): T },
): Promise<T | undefined> {
  let text: string;
  try {
    text = await readFile(join(dir, name), 'utf8');
  } catch (err) {
    if (NEVER_READABLE.has(codeOf(err))) return undefined;
    throw err;
  }
  try {
    return schema.parse(JSON.parse(text));
  } catch {
    return undefined;
  }
}
