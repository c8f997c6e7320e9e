// The node agents' long polls against the server's limit of concurrent long polls per namespace
// and frontend (`frontend.namespaceCount`, 1,200 by default). With the SDK's default (up to 10
// activity polls per worker) about 120 nodes reached it and the server refused polls (the scale
// simulation at 300 nodes, docs/benchmarks.md, "Scale"); the agent polls once. A server whose limit is 40
// here: 30 workers polling as the SDK does by default are refused, 30 node agents are not.
import { freePort } from '../../tools/processes';
import { startDevServer, type DevServer } from '../../tools/temporal-server';
import { createNodeAgent, NODE_AGENT_POLLING } from '../../worker/agent/dataplane-worker';
import { NativeConnection, Worker } from '@temporalio/worker';
import { setTimeout as sleep } from 'node:timers/promises';
import { NodeAgentConfigSchema } from '../../domain/config';
import type { DataplaneActivities } from '../../domain/dataplane';
import { sampleSum, scrape } from '../harness/exposition';
import { quietRuntime, uniqueName } from '../harness/temporal';

const LIMIT = 40;
const WORKERS = 30;
/** Long enough for every refused poll to have been retried a few times. */
const SETTLE_MS = 8_000;

let server: DevServer;
let metricsPort: number;

// A server of its own for each case: a worker's long polls can outlive its shutdown on the
// server's side (until the server notices the cancel), and would count against the next case.
beforeEach(async () => {
  quietRuntime();
  metricsPort = await freePort();
  server = await startDevServer({
    port: await freePort(),
    metricsPort,
    dynamicConfig: { 'frontend.namespaceCount': LIMIT },
  });
});
afterEach(async () => {
  await server?.stop();
});

const refusedPolls = async () =>
  sampleSum(await scrape(metricsPort), 'service_errors_resource_exhausted', {
    operation: 'PollActivityTaskQueue',
  });

/** Activities nobody calls here: the test is about the polls. */
const idle = {
  activateAttachment: async () => ({}),
  deactivateAttachment: async () => undefined,
  revokeOffer: async () => null,
} as unknown as DataplaneActivities;

/** `WORKERS` activity workers, each on a node's queue, running until `settled` resolves. */
async function pollFor(start: (node: string) => Promise<{ worker: Worker; close(): Promise<void> }>) {
  const started = await Promise.all(Array.from({ length: WORKERS }, () => start(uniqueName('poll'))));
  const running = started.map((s) => s.worker.run());
  const before = await refusedPolls();
  await sleep(SETTLE_MS); // the measured window itself, not a wait for anything
  const refused = (await refusedPolls()) - before;
  process.stdout.write(`\nnode-agent-polling: ${refused} polls refused in ${SETTLE_MS} ms\n`);
  for (const s of started) s.worker.shutdown();
  await Promise.all(running);
  for (const s of started) await s.close();
  return refused;
}

test(`${WORKERS} workers polling as the SDK does by default are refused at a limit of ${LIMIT}`, async () => {
  const refused = await pollFor(async (node) => {
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await Worker.create({ connection, taskQueue: `netlease-node-${node}`, activities: idle });
    return { worker, close: () => connection.close() };
  });
  expect(refused).toBeGreaterThan(0);
}, 60_000);

test(`${WORKERS} node agents poll once each: none refused`, async () => {
  expect(NODE_AGENT_POLLING.activityTaskPollerBehavior.maximum).toBe(1);
  const refused = await pollFor(async (nodeName) => {
    const config = NodeAgentConfigSchema.parse({ temporal: { address: server.address }, nodeName });
    const agent = await createNodeAgent(config, idle);
    return { worker: agent.worker, close: () => agent.close() };
  });
  expect(refused).toBe(0);
}, 60_000);
