// A CNI directory the way a node has one: `bin/` (netlease, the reference plugins, cnitool) and
// `net.d/` with conflists. `npm start` makes one for trying netlease by hand; tests make their own.
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { programPath } from './programs';

/** The CNI plugin executable: bin/netlease, a link to the static shim bootstrap builds in dist/bin. */
export const SHIM = join(__dirname, '..', '..', 'bin', 'netlease');

export interface CniDir {
  confDir: string;
  binDir: string;
}

function link(target: string, path: string): void {
  rmSync(path, { force: true });
  symlinkSync(target, path);
}

/** Writes (again, idempotently) `<root>/bin` and `<root>/net.d/<name>.conflist` for each conflist. */
export function writeCniDir(root: string, conflists: Record<string, object>): CniDir {
  const confDir = join(root, 'net.d');
  const binDir = join(root, 'bin');
  mkdirSync(confDir, { recursive: true });
  mkdirSync(binDir, { recursive: true });
  for (const program of ['loopback', 'bridge', 'host-local', 'cnitool'])
    link(programPath(program), join(binDir, program));
  // The static shim reaches its node agent by a unix socket, from any network namespace.
  link(SHIM, join(binDir, 'netlease'));
  for (const [name, conflist] of Object.entries(conflists)) {
    writeFileSync(join(confDir, `${name}.conflist`), `${JSON.stringify({ name, ...conflist }, null, 2)}\n`);
  }
  return { confDir, binDir };
}
