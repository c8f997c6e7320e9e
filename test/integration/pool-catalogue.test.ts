// What the node agents' pool catalogue (temporal/pool-catalogue) asks of each pool workflow: its
// `spec` query (the spec and families, a few hundred bytes), not its `state` query (the whole block
// table, on every agent every 30 s). A control worker of a version before `spec` is still read,
// through `state`. The `spec` query is offered in the UI with its description, and a UI query
// with an empty form is harmless: its input is ignored and nothing is written to the history.
import { Client, type WorkflowClientInterceptor } from '@temporalio/client';
import { poolWorkflowId } from '../../domain/ids';
import { servedPools } from '../../temporal/pool-catalogue';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { uniqueName } from '../harness/temporal';
import { gate } from '../harness/workflow-env';
import { waitForValue } from '../harness/wait';

const EU = uniqueName('eu');
const NODE_SELECTOR = { matchLabels: { region: 'eu' } };
const NAMESPACE_SELECTOR = { matchExpressions: [{ key: 'env', operator: 'In' as const, values: ['prod'] }] };

let scenario: Scenario;

beforeAll(async () => {
  scenario = await Scenario.create('pool-catalogue', {
    morePools: [
      {
        name: EU,
        cidrs: ['10.203.0.0/16'],
        nodeSelector: NODE_SELECTOR,
        namespaceSelector: NAMESPACE_SELECTOR,
      },
    ],
  });
}, 60_000);
afterAll(async () => {
  await scenario?.close();
});

/**
 * A client on the scenario's connection that records the query types it sends (`rename`: sent as;
 * `held`: each query waits for it).
 */
function recordingClient(rename: Record<string, string> = {}, held: Promise<void> = Promise.resolve()) {
  const sent: string[] = [];
  const interceptor: WorkflowClientInterceptor = {
    query: async (input, next) => {
      const queryType = rename[input.queryType] ?? input.queryType;
      sent.push(queryType);
      await held;
      return next({ ...input, queryType });
    },
  };
  const client = new Client({
    connection: scenario.temporal.client.connection,
    interceptors: { workflow: [interceptor] },
  });
  return { client, sent };
}

const expectedPools = () =>
  [
    { name: EU, namespaceSelector: NAMESPACE_SELECTOR, nodeSelector: NODE_SELECTOR },
    { name: scenario.temporal.taskQueue },
  ].sort((a, b) => (a.name < b.name ? -1 : 1));

/** The catalogue as read through `client` now (fresh: a read may not be skipped as a second old). */
const readThrough = (recorded: { client: Client; sent: string[] }) =>
  waitForValue(
    () => servedPools(recorded.client, scenario.temporal.taskQueue, true),
    () => recorded.sent.length > 0,
    10_000,
  );

test('the catalogue reads each pool by its spec query, never its block table', async () => {
  const recorded = recordingClient();
  expect(await readThrough(recorded)).toEqual(expectedPools());
  expect(recorded.sent).toEqual(['spec', 'spec']);
});

test('a pool workflow of a version without the spec query is read through its state', async () => {
  const recorded = recordingClient({ spec: 'spec-of-a-later-version' });
  expect(await readThrough(recorded)).toEqual(expectedPools());
  expect([...recorded.sent].sort()).toEqual([
    'spec-of-a-later-version',
    'spec-of-a-later-version',
    'state',
    'state',
  ]);
});

test('the UI offers the spec query with its description, and an empty form is harmless', async () => {
  const pool = scenario.temporal.client.workflow.getHandle(poolWorkflowId(EU));
  const metadata = await pool.query<{
    definition?: { queryDefinitions?: Array<{ name: string; description?: string }> };
  }>('__temporal_workflow_metadata');
  expect(metadata.definition?.queryDefinitions?.find((q) => q.name === 'spec')?.description).toMatch(
    /^The pool's spec .* without its block table\. No input\./,
  );
  const eventsBefore = (await pool.describe()).historyLength;
  const answers = [await pool.query('spec'), await pool.query('spec', null), await pool.query('spec', '')];
  for (const answer of answers)
    expect(answer).toEqual({
      spec: expect.objectContaining({ name: EU, cidrs: ['10.203.0.0/16'], nodeSelector: NODE_SELECTOR }),
      families: [4],
    });
  expect((await pool.describe()).historyLength).toBe(eventsBefore);
});

test('ADDs that find the catalogue old share one read of it', async () => {
  const recorded = recordingClient();
  const later = Date.now() + 10 * 60_000; // past any kept catalogue's age
  const answers = await Promise.all(
    Array.from({ length: 16 }, () => servedPools(recorded.client, scenario.temporal.taskQueue, false, later)),
  );
  for (const answer of answers) expect(answer).toEqual(expectedPools());
  expect(recorded.sent).toEqual(['spec', 'spec']);
});

test('a catalogue a little past its time answers at once while one read renews it', async () => {
  const { taskQueue } = scenario.temporal;
  const first = recordingClient();
  const readAt = Date.now() + 20 * 60_000;
  await servedPools(first.client, taskQueue, false, readAt);
  expect(first.sent).toEqual(['spec', 'spec']);
  const renewal = gate();
  const second = recordingClient({}, renewal.opened);
  // 40 s old: answered from what is kept while the read waits on its queries.
  expect(await servedPools(second.client, taskQueue, false, readAt + 40_000)).toEqual(expectedPools());
  await waitForValue(
    async () => second.sent.length,
    (n) => n === 2,
    10_000,
  );
  renewal.open();
  // Asked fresh half a second after the renewal's start: that read is waited for, none is made.
  await servedPools(second.client, taskQueue, true, readAt + 40_500);
  await servedPools(second.client, taskQueue, false, readAt + 50_000);
  expect(second.sent).toEqual(['spec', 'spec']);
  // Past twice its time an ADD waits for the read.
  const third = recordingClient();
  await servedPools(third.client, taskQueue, false, readAt + 40_000 + 61_000);
  expect(third.sent).toEqual(['spec', 'spec']);
});

test('a task queue from a request with backslashes or quotes lists no pool and is not refused by Temporal', async () => {
  // The fuzz's `"taskQueue": "\\"` made the list's query invalid, and the ADD was refused without naming the field.
  for (const taskQueue of ['\\', "'", "a\\'b", "x' OR TaskQueue != '", `${scenario.temporal.taskQueue}\\`])
    expect(await servedPools(scenario.temporal.client, taskQueue, true)).toEqual([]);
  expect(await servedPools(scenario.temporal.client, scenario.temporal.taskQueue, true)).toEqual(
    expectedPools(),
  );
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 2);
});
