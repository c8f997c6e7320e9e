// One real Temporal dev server (in memory) for the whole test run; tests isolate themselves by
// task queue and workflow ids. Its PID is recorded so teardown stops exactly that process.
import { writeFileSync } from 'node:fs';
import { startDevServer } from '../../tools/temporal-server';
import { freePort } from '../../tools/processes';
import { SERVER_FILE } from './server-file';

export default async function globalSetup(): Promise<void> {
  const server = await startDevServer({ port: await freePort() });
  writeFileSync(SERVER_FILE, JSON.stringify({ address: server.address, pid: server.pid }));
  process.env.NETLEASE_TEST_TEMPORAL = server.address;
  process.stdout.write(`\ntest Temporal dev server ${server.address} (pid ${server.pid})\n`);
}
