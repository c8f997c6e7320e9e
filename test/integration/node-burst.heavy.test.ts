// A burst of 110 allocations on one node whose workflow is near its history limit, sent as the
// control worker sends them (produceAddresses on one warm client): all complete, the server
// rejects none, and the next allocation answers at its normal latency.
import type { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { addressActivities, type ProduceInput } from '../../activities/addresses';
import type { AddressGrant } from '../../domain/allocation';
import { nodeWorkflowId } from '../../domain/ids';
import { NODE_WORKFLOW_TYPE, nodeStateQuery } from '../../workflows/node-messages';
import { waitFor } from '../../tools/processes';
import { prebuiltBundle } from '../../worker/control/bundle';
import { countingClient, rejections } from '../harness/counting-client';
import { nodeOperations } from '../harness/node-operations';
import { expectReplayed } from '../harness/replay';
import { testConfig, uniqueName, withControlWorker } from '../harness/temporal';

const BURST = 110;
/** "Near its history limit": the burst starts within this many events of it. */
const MARGIN = 60;
/**
 * The server also suggests continue-as-new, which the node honours, at 4,096 events
 * (`limit.historyCount.suggestContinueAsNew`) and after 90% of `history.maxTotalUpdates` (2,000):
 * filling stops short of those too.
 */
const EVENTS_SUGGESTING_CAN = 4096;
const UPDATES_SUGGESTING_CAN = 1800;
const UPDATE_MARGIN = 60;
const ctx = withControlWorker('node-burst');

/** Allocations and releases straight to the node workflow until its history is `target` long. */
async function fillHistory(client: Client, node: string, limit: number, target: number): Promise<number> {
  const config = testConfig(ctx.temporal.taskQueue);
  const pool = config.pools[0];
  if (!pool) throw new Error('test config has no pool');
  const handle = client.workflow.getHandle(nodeWorkflowId(node));
  const direct = nodeOperations({
    client,
    taskQueue: ctx.temporal.taskQueue,
    nodeName: node,
    historyLimit: limit,
  });
  let updates = 0;
  const op = async (owner: string, keep: boolean) => {
    updates += keep ? 1 : 2;
    await direct.allocate({ owner, podUid: owner, pool, run: 'warm' });
    if (keep) return;
    await direct.release({ owner, pool: pool.name, cooldownMs: 0, run: 'warm' });
  };
  let n = 0;
  let length = 0;
  let run: string | undefined;
  // Four callers at a time, below the server's ten in-flight updates (filling must not be the
  // burst), in rounds that shrink near the target so history stops inside the margin, short of
  // the limit (an allocate and a release add about ten events).
  while (length < target && updates < UPDATES_SUGGESTING_CAN - UPDATE_MARGIN) {
    const room = Math.min((target - length) / 80, (UPDATES_SUGGESTING_CAN - UPDATE_MARGIN - updates) / 8);
    const perLane = Math.max(1, Math.min(5, Math.floor(room)));
    const round = Array.from({ length: 4 }, async (_, lane) => {
      for (let i = 0; i < perLane; i++) {
        const k = n + lane * perLane + i;
        await op(`lease/warm-${k}/eth0`, k % 3 === 0);
      }
    });
    await Promise.all(round);
    n += 4 * perLane;
    const description = await handle.describe();
    run ??= description.runId;
    if (description.runId !== run) throw new Error(`node continued-as-new at ${length} events while filling`);
    length = description.historyLength;
  }
  return length;
}

async function timed<T>(call: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await call();
  return { value, ms: performance.now() - started };
}

const addressesOf = (grants: AddressGrant[][], family: 4 | 6) =>
  grants.flatMap((g) => g.filter((a) => a.family === family).map((a) => a.address));

test(`${BURST} concurrent allocations on a node near its history limit all complete, none rejected`, async () => {
  const node = uniqueName('burst');
  const config = testConfig(ctx.temporal.taskQueue);
  const limit = config.nodeHistoryLimit;
  const { client, failures } = await countingClient();
  try {
    const activities = addressActivities({ client, config });
    const input = (id: string): ProduceInput => ({
      leaseId: `lease/${id}/eth0`,
      run: 'r1',
      podUid: id,
      nodeName: node,
      pool: ctx.temporal.taskQueue,
    });
    const length = await fillHistory(client, node, limit, Math.min(limit, EVENTS_SUGGESTING_CAN) - MARGIN);
    const before = await timed(() => activities.produceAddresses(input('before')));
    failures.length = 0;

    let done = 0;
    const started = performance.now();
    const burst = Array.from({ length: BURST }, (_, i) =>
      activities.produceAddresses(input(`burst-${i}`)).finally(() => done++),
    );
    const settled = Promise.allSettled(burst);
    expect(await waitFor(() => done === BURST, 120_000, 100)).toBe(true);
    const burstMs = performance.now() - started;
    const outcomes = await settled;
    const rejected = rejections(failures);

    const after = await timed(() => activities.produceAddresses(input('after')));
    process.stdout.write(
      `\nnode-burst: limit ${limit}, history ${length} before the burst; ${BURST} allocations in ` +
        `${Math.round(burstMs)} ms; ${rejected.length} rejected/aborted updates seen by the client ` +
        `(${failures.length} failed calls); allocation latency ${Math.round(before.ms)} ms before, ` +
        `${Math.round(after.ms)} ms after\n`,
    );

    expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
    expect(rejected).toEqual([]);
    const grants = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value.addresses] : []));
    for (const family of [4, 6] as const) {
      expect(addressesOf(grants, family)).toHaveLength(BURST);
      expect(new Set(addressesOf(grants, family)).size).toBe(BURST);
    }
    const state = await client.workflow.getHandle(nodeWorkflowId(node)).query(nodeStateQuery);
    const held = Object.values(state.tables[ctx.temporal.taskQueue]?.allocations ?? {});
    process.stdout.write(`node-burst: carried state ${JSON.stringify(state).length} bytes\n`);
    const owners = held.map((a) => `${a.owner}/${a.family}`);
    expect(new Set(owners).size).toBe(owners.length);
    grants.forEach((g, i) => {
      for (const grant of g)
        expect(held.find((a) => a.address === grant.address)?.owner).toBe(`lease/burst-${i}/eth0`);
    });
    expect(after.value.addresses).toHaveLength(2);
    expect(after.ms).toBeLessThan(5000); // liveness, not a benchmark
  } finally {
    await client.connection.close();
  }
}, 600_000);

test('node runs stay within their history limit and replay quickly', async () => {
  const { nodeHistoryLimit } = testConfig(ctx.temporal.taskQueue);
  const histories = [];
  for await (const run of ctx.temporal.client.workflow.list({
    query: `TaskQueue = '${ctx.temporal.taskQueue}'`,
  })) {
    const history = await ctx.temporal.client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
    histories.push({ workflowId: run.workflowId, history, node: run.type === NODE_WORKFLOW_TYPE });
  }
  // Shortest first: the first replay also pays for starting the replayer.
  histories.sort((a, b) => (a.history.events?.length ?? 0) - (b.history.events?.length ?? 0));
  const longest = histories.filter((h) => h.node).at(-1);
  let last = performance.now();
  let ms = 0;
  for await (const result of Worker.runReplayHistories({ workflowBundle: prebuiltBundle() }, histories)) {
    if (result.workflowId === longest?.workflowId) ms = performance.now() - last;
    last = performance.now();
  }
  const events = longest?.history.events?.length ?? 0;
  process.stdout.write(
    `node-burst: replaying the longest node run (${events} events) took ${Math.round(ms)} ms\n`,
  );
  expect(histories.length).toBeGreaterThan(1);
  // A run continues-as-new soon after its limit, whatever keeps arriving.
  expect(events).toBeGreaterThan(0);
  expect(events).toBeLessThan(nodeHistoryLimit + 200);
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(ctx.temporal, 2);
});
