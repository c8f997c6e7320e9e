// Installing a file that a container runtime may read or exec at any moment. The new content goes
// to a hidden temp file in the same directory (same filesystem), is fsynced with its final mode,
// then renamed over the old name: rename(2) is atomic, so a reader sees the old file or the new
// one, never a part, and a plugin being executed keeps its old inode (writing it in place would
// fail with ETXTBSY). The temp name ends in `.tmp-<hex>`, which no runtime loads or execs.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fchmodSync,
  fsyncSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

export type Outcome = 'written' | 'unchanged';

const isMissing = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

/** A regular file (not a symlink) with exactly these bytes and this mode. */
function isCurrent(path: string, content: Buffer, mode: number): boolean {
  try {
    const stat = lstatSync(path);
    return (
      stat.isFile() &&
      (stat.mode & 0o7777) === mode &&
      stat.size === content.length &&
      readFileSync(path).equals(content)
    );
  } catch (err) {
    if (isMissing(err)) return false;
    throw err;
  }
}

function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function installFile(path: string, content: Buffer, mode: number): Outcome {
  if (isCurrent(path, content, mode)) return 'unchanged';
  const dir = dirname(path);
  const prefix = `.${basename(path)}.tmp-`;
  // A run killed mid-write leaves its temp file behind; one installer runs per node, so it is stale.
  for (const name of readdirSync(dir)) if (name.startsWith(prefix)) rmSync(join(dir, name), { force: true });
  const temp = join(dir, prefix + randomBytes(6).toString('hex'));
  try {
    const fd = openSync(temp, 'wx', mode);
    try {
      writeFileSync(fd, content);
      fchmodSync(fd, mode); // the umask may have narrowed open's mode
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
  syncDir(dir); // the rename itself survives a crash of the node
  return 'written';
}
