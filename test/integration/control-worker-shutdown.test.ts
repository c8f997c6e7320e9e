// A control worker stops within its grace time even while it waits on workflows that only it would
// serve: a pool's configure and an activity's block request, each an update that is never taken
// once the worker stops polling (seen: a scenario's close waited past two minutes).
import type { Client } from '@temporalio/client';
import { POOL_WORKFLOW_TYPE } from '../../workflows/pool-messages';
import { PoolSpecSchema, type PoolSpec } from '../../domain/config';
import { nodeWorkflowId, poolWorkflowId } from '../../domain/ids';
import { poolStart } from '../../temporal/pools';
import { unlessGone } from '../../temporal/workflow-gone';
import { nodeOperations } from '../harness/node-operations';
import { expectReplayed } from '../harness/replay';
import {
  connectTest,
  runControlWorker,
  testConfig,
  uniqueName,
  type RunningWorker,
  type TestTemporal,
} from '../harness/temporal';
import { waitForValue } from '../harness/wait';

let temporal: TestTemporal;
beforeAll(async () => (temporal = await connectTest('shutdown')));
afterAll(async () => temporal?.close());

/** A pool whose workflow runs on a task queue no worker polls: every update to it waits. */
async function strandedPool(client: Client): Promise<{ pool: PoolSpec; end: () => Promise<unknown> }> {
  const pool = PoolSpecSchema.parse({ name: uniqueName('stranded'), cidrs: ['198.18.0.0/20'] });
  const run = await client.workflow.start(POOL_WORKFLOW_TYPE, {
    ...poolStart(testConfig(uniqueName('tq-nobody'), { pools: [pool] }), pool),
    workflowId: poolWorkflowId(pool.name),
  });
  return { pool, end: () => run.terminate('test over').catch(() => undefined) };
}

/** The worker's stop resolves within its grace time (10 s) and a margin for a loaded machine. */
async function expectStopped(worker: RunningWorker): Promise<void> {
  const stopped = worker.stop().then(() => 'stopped' as const);
  const outlasted = new Promise<'still stopping'>((resolve) =>
    setTimeout(() => resolve('still stopping'), 40_000).unref(),
  );
  expect(await Promise.race([stopped, outlasted])).toBe('stopped');
}

test('an activity waiting on a block the stopped worker would hand out ends with the worker', async () => {
  const { client, taskQueue } = temporal;
  const { pool, end } = await strandedPool(client);
  const worker = await runControlWorker(testConfig(taskQueue));
  const nodeName = uniqueName('node');
  const ops = nodeOperations({ client, taskQueue, nodeName, historyLimit: 10_000 });
  const asked = ops.allocate({ owner: 'lease/p/eth0', podUid: 'p', pool, run: 'r' }).catch((e: unknown) => e);
  try {
    // The update starts the node's workflow (not found until then); its block request waits.
    const started = async () => {
      const { raw } = await client.workflow.getHandle(nodeWorkflowId(nodeName)).describe();
      return (raw.pendingActivities ?? [])
        .filter((a) => a.lastStartedTime !== null && a.lastStartedTime !== undefined)
        .map((a) => a.activityType?.name ?? '');
    };
    await waitForValue(
      () => unlessGone(started, [] as string[]),
      (names) => names.includes('acquireBlock'),
      30_000,
    );
    await expectStopped(worker);
  } finally {
    await client.workflow
      .getHandle(nodeWorkflowId(nodeName))
      .terminate('test over')
      .catch(() => undefined);
    await end();
    await asked;
  }
}, 120_000);

test('a configure the stopped worker would take is not waited for', async () => {
  const { client, taskQueue } = temporal;
  const { pool, end } = await strandedPool(client);
  try {
    const worker = await runControlWorker(testConfig(`${taskQueue}-configure`, { pools: [pool] }));
    await expectStopped(worker);
  } finally {
    await end();
  }
}, 120_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(temporal, 2); // the node's, and the pool the first worker opened
});
