// The production-shaped Temporal of its own (PostgreSQL, 4 history shards, SQL visibility): the
// cluster is what the config says, and a lease lives through a stop of the whole server (Temporal
// and PostgreSQL) with the control worker left running: it is queried, listed and released after.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { z } from 'zod';
import { LeasePhase, PodUID } from '../../domain/search-attributes';
import { freePortIn, runToEnd } from '../../tools/processes';
import { startProductionTemporal, type ProductionTemporal } from '../../tools/temporal-production';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const dir = mkdtempSync(join(tmpdir(), 'netlease-production-'));
let server: ProductionTemporal;
let port: number;
let scenario: Scenario;

const ClusterInfoSchema = z.object({
  historyShardCount: z.number(),
  persistenceStore: z.string(),
  visibilityStore: z.string(),
});

beforeAll(async () => {
  port = await freePortIn(20000, 32000);
  server = await startProductionTemporal({ dir, port });
  // This file's processes talk to its own server (each test file runs in a process of its own).
  process.env.NETLEASE_TEST_TEMPORAL = server.address;
  scenario = await Scenario.create('prod');
}, 180000);

afterAll(async () => {
  await scenario?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('the server is PostgreSQL with SQL visibility and 4 history shards', async () => {
  const run = await runToEnd(server.cli, [
    ...['operator', 'cluster', 'describe', '--address', server.address, '--output', 'json'],
  ]);
  expect(run.stderr).toBe('');
  const info = ClusterInfoSchema.parse(JSON.parse(run.stdout));
  expect(info).toEqual({
    historyShardCount: 4,
    persistenceStore: 'postgres12',
    visibilityStore: 'postgres12',
  });
});

test("a burst of visibility lists, as the pod watcher makes them, is not refused by the server's rate limit", async () => {
  // No retry interceptor: a refusal (RESOURCE_EXHAUSTED) shows instead of becoming a wait.
  const connection = await Connection.connect({ address: server.address, interceptors: [] });
  try {
    const query = `WorkflowType = 'leaseWorkflow' AND PodUID = '${uniqueName('no-pod')}'`;
    const answers = await Promise.allSettled(
      Array.from({ length: 40 }, () =>
        connection.workflowService.listWorkflowExecutions({ namespace: 'default', query, pageSize: 10 }),
      ),
    );
    const refused = answers.flatMap((a) => (a.status === 'rejected' ? [String(a.reason)] : []));
    expect({ answered: answers.length - refused.length, refused: refused.slice(0, 3) }).toEqual({
      answered: 40,
      refused: [],
    });
  } finally {
    await connection.close();
  }
});

test('a lease lives through a stop of Temporal and PostgreSQL, and is released after', async () => {
  const { cluster } = scenario;
  const node = uniqueName('node');
  await cluster.createNode(node);
  const uid = await cluster.createPod('pod-0', node);
  const addresses = await scenario.add('pod-0', uid, node);
  expect(addresses.length).toBe(2);
  const before = await scenario.leaseState(uid);

  await server.stop();
  server = await startProductionTemporal({ dir, port });

  const after = await scenario.waitForPhase(uid, before.phase, 60000);
  expect(after.addresses).toEqual(addresses);
  const query = `${PodUID.name} = '${uid}' AND ${LeasePhase.name} = '${before.phase}'`;
  const listed = async () => (await scenario.temporal.client.workflow.count(query)).count;
  await waitForValue(
    listed,
    (n) => n === 1,
    30000,
    200,
    `the lease listed ${before.phase} after the restart`,
  );

  await cluster.deletePod('pod-0', 'now');
  const released = await scenario.waitForPhase(uid, 'Released', 60000);
  expect(released.addresses).toEqual(addresses);
  await expectReplayed(scenario.temporal, 2);
}, 240000);
