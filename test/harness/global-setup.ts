// One real Temporal server and one real kube-apiserver + etcd for the whole test run; tests isolate
// themselves by task queue, workflow ids, Kubernetes namespace and node names. The server is the
// dev server, or with NETLEASE_TEST_TEMPORAL_SERVER=production the Temporal server on PostgreSQL
// (`npm run test:production`). PIDs are recorded so teardown stops exactly those processes.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevServer, type TemporalServer } from '../../tools/temporal-server';
import { startProductionTemporal } from '../../tools/temporal-production';
import { startLocalKube } from '../../tools/kube-apiserver';
import { freePort, freePortIn, stopLeftovers } from '../../tools/processes';
import { SERVER_FILE } from './server-file';

async function startTemporal(dir: string): Promise<TemporalServer> {
  const kind = process.env.NETLEASE_TEST_TEMPORAL_SERVER ?? 'dev';
  if (kind === 'dev') return startDevServer({ port: await freePort() });
  if (kind === 'production') {
    const server = await startProductionTemporal({
      dir: join(dir, 'temporal'),
      port: await freePortIn(20000, 32000),
    });
    // Tests that make visibility lag reach its database (test/harness/visibility-lag).
    process.env.NETLEASE_TEST_POSTGRES = `${server.postgres.host}:${server.postgres.port}`;
    return server;
  }
  throw new Error(`NETLEASE_TEST_TEMPORAL_SERVER=${kind}: known are dev and production`);
}

export default async function globalSetup(): Promise<void> {
  await stopLeftovers(SERVER_FILE, /temporal|etcd|kube-apiserver|postgres/);
  const dir = mkdtempSync(join(tmpdir(), 'netlease-servers-'));
  const [server, kube] = await Promise.all([startTemporal(dir), startLocalKube({ dir: join(dir, 'kube') })]);
  writeFileSync(SERVER_FILE, JSON.stringify({ pids: [...server.pids(), ...kube.pids], dir }));
  process.env.NETLEASE_TEST_TEMPORAL = server.address;
  process.env.NETLEASE_TEST_KUBECONFIG = kube.kubeconfig;
  process.stdout.write(
    `\ntest Temporal ${server.address} (pids ${server.pids().join(', ')}); kube-apiserver ${kube.server} (pids ${kube.pids.join(', ')})\n`,
  );
}
