// `npm start`'s extra set-up for what its flags ask for: bootstrap.sh with those flags, visible,
// idempotent (fast when everything is in place).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * bootstrap.sh `--cluster` (containerd, kubelet, images), `--production` (PostgreSQL, server) or
 * `--conformance` (the cluster's, and e2e.test, agnhost, curl, netcat-openbsd).
 */
export function runBootstrap(root: string, flag: '--cluster' | '--production' | '--conformance'): void {
  const run = spawnSync('sh', [join(root, 'tools', 'bootstrap.sh'), flag], { stdio: 'inherit' });
  if (run.status !== 0) throw new Error(`tools/bootstrap.sh ${flag} failed (exit ${run.status})`);
}
