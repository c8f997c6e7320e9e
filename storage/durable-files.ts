// Files on the node that must survive a crash (queued DELs, offers): each written whole under a
// temporary name, fsync'd, renamed into place, and the directory fsync'd, so after a crash a file
// is either absent or complete.
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
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

/** The complete files of a directory (temporaries skipped), sorted by name; none if it is missing. */
export async function durableFiles(dir: string, suffix: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  return names.filter((n) => n.endsWith(suffix) && !n.startsWith('.')).sort();
}

/** A file's text, or undefined when it cannot be read. */
const readDurable = (dir: string, name: string): Promise<string | undefined> =>
  readFile(join(dir, name), 'utf8').catch(() => undefined);

/** A file's JSON as `schema` reads it, or undefined when it cannot be read or is not that (damaged). */
export async function readDurableAs<T>(
  dir: string,
  name: string,
  schema: { parse(value: unknown): T },
): Promise<T | undefined> {
  try {
    return schema.parse(JSON.parse((await readDurable(dir, name)) ?? 'null'));
  } catch {
    return undefined;
  }
}
