// One real Temporal dev server (in memory) and one real kube-apiserver + etcd for the whole test
// run; tests isolate themselves by task queue, workflow ids, Kubernetes namespace and node names.
// PIDs are recorded so teardown stops exactly those processes.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevServer } from '../../tools/temporal-server';
import { startLocalKube } from '../../tools/kube-apiserver';
import { freePort, stopLeftovers } from '../../tools/processes';
import { SERVER_FILE } from './server-file';

export default async function globalSetup(): Promise<void> {
  await stopLeftovers(SERVER_FILE);
  const kubeDir = mkdtempSync(join(tmpdir(), 'netlease-kube-'));
  const [server, kube] = await Promise.all([
    startDevServer({ port: await freePort() }),
    startLocalKube({ dir: kubeDir }),
  ]);
  writeFileSync(SERVER_FILE, JSON.stringify({ pids: [server.pid, ...kube.pids], kubeDir }));
  process.env.NETLEASE_TEST_TEMPORAL = server.address;
  process.env.NETLEASE_TEST_KUBECONFIG = kube.kubeconfig;
  process.stdout.write(
    `\ntest Temporal ${server.address} (pid ${server.pid}); kube-apiserver ${kube.server} (pids ${kube.pids.join(', ')})\n`,
  );
}
