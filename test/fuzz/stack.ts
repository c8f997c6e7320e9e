// The long run's own servers: a Temporal dev server (in memory) and etcd + kube-apiserver, as
// the test run's global setup starts them, published the same way (NETLEASE_TEST_*) so the
// fuzz site and the harness find them. Stopped by PID; nothing is shared with a jest run.
import { mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalKube } from '../../tools/kube-apiserver';
import { freePort, stopPid } from '../../tools/processes';
import { startDevServer } from '../../tools/temporal-server';

export interface FuzzStack {
  dir: string;
  stop(): Promise<void>;
}

export async function startFuzzStack(): Promise<FuzzStack> {
  const dir = mkdtempSync(join(tmpdir(), 'netlease-fuzz-stack-'));
  const [server, kube] = await Promise.all([
    startDevServer({ port: await freePort(), logFd: openSync(join(dir, 'temporal.log'), 'a') }),
    startLocalKube({ dir: join(dir, 'kube'), logFd: openSync(join(dir, 'kube.log'), 'a') }),
  ]);
  process.env.NETLEASE_TEST_TEMPORAL = server.address;
  process.env.NETLEASE_TEST_KUBECONFIG = kube.kubeconfig;
  return {
    dir,
    async stop() {
      for (const pid of [server.pid, ...kube.pids]) await stopPid(pid);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
