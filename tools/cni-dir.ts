// A CNI directory the way a node has one: `bin/` (netlease, the reference plugins, cnitool) and
// `net.d/` with conflists. `npm start` makes one for trying netlease by hand; tests make their own.
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { programPath } from './programs';

/** The CNI plugin executable (bin/netlease in the work tree). */
export const SHIM = join(__dirname, '..', '..', 'bin', 'netlease');

export interface CniDir {
  confDir: string;
  binDir: string;
}

export interface CniDirOptions {
  /** netlease re-enters this network namespace first (a main plugin run inside a test's host namespace). */
  shimNetns?: string;
}

function link(target: string, path: string): void {
  rmSync(path, { force: true });
  symlinkSync(target, path);
}

/** Writes (again, idempotently) `<root>/bin` and `<root>/net.d/<name>.conflist` for each conflist. */
export function writeCniDir(
  root: string,
  conflists: Record<string, object>,
  options: CniDirOptions = {},
): CniDir {
  const confDir = join(root, 'net.d');
  const binDir = join(root, 'bin');
  mkdirSync(confDir, { recursive: true });
  mkdirSync(binDir, { recursive: true });
  for (const program of ['loopback', 'bridge', 'host-local', 'cnitool'])
    link(programPath(program), join(binDir, program));
  const shim = join(binDir, 'netlease');
  if (options.shimNetns) {
    rmSync(shim, { force: true });
    writeFileSync(shim, `#!/bin/sh\nexec nsenter --net=${options.shimNetns} ${process.execPath} ${SHIM}\n`);
    chmodSync(shim, 0o755);
  } else {
    link(SHIM, shim);
  }
  for (const [name, conflist] of Object.entries(conflists)) {
    writeFileSync(join(confDir, `${name}.conflist`), `${JSON.stringify({ name, ...conflist }, null, 2)}\n`);
  }
  return { confDir, binDir };
}
