// When a pool or node run continues-as-new: on the history as the last job it recorded saw it, not
// in a workflow task an update's validator rejected. Such a task leaves no event but its own, so a
// replay gets no activation for it, and a run that continued there did not replay (the soak: a pool
// rejected an update while its history passed the limit; "No command scheduled for event
// ContinuedAsNew").
import type { WorkflowHandle, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { PoolSpecSchema } from '../../domain/config';
import { nodeWorkflowId, poolWorkflowId } from '../../domain/ids';
import {
  batchUpdate,
  NODE_WORKFLOW_TYPE,
  nodeObservedSignal,
  type NodeInput,
} from '../../workflows/node-messages';
import { acquireBlockUpdate, POOL_WORKFLOW_TYPE, type PoolInput } from '../../workflows/pool-messages';
import { expectReplayed } from '../harness/replay';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { workflowTestEnv, type WorkflowTestEnv } from '../harness/workflow-env';

const spec = PoolSpecSchema.parse({
  name: 'carried',
  cidrs: ['198.18.0.0/24'],
  blockSize: { ipv4: 29 },
});

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('wf-can');
  await t.worker({});
});
afterAll(async () => t?.close());

/** A run's history length once no workflow task is scheduled after its last completed one. */
async function atRest(handle: WorkflowHandle): Promise<number> {
  const SCHEDULED = 5; // EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED
  const COMPLETED = 7; // EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
  const rest = await waitForValue(
    async () => ((await handle.fetchHistory()).events ?? []).map((e) => Number(e.eventType)),
    (types) => types.lastIndexOf(COMPLETED) > types.lastIndexOf(SCHEDULED),
    20_000,
  );
  return rest.length;
}

const statusOf = async (handle: WorkflowHandle) => (await handle.describe()).status.name;

/**
 * A run of `start(limit)` whose limit is passed by the workflow task a rejected update makes: it
 * goes on running; the next recorded job (`accepted`) sees the length and the run continues.
 */
async function rejectedAtTheLimit(
  start: (historyLimit: number) => Promise<WorkflowHandleWithFirstExecutionRunId>,
  reject: (handle: WorkflowHandle) => Promise<unknown>,
  accept: (handle: WorkflowHandle) => Promise<unknown>,
): Promise<void> {
  // The length of such a run at rest, read from one with a limit it does not reach.
  const begun = await start(10_000);
  const measured = t.env.client.workflow.getHandle(begun.workflowId, begun.firstExecutionRunId);
  const rest = await atRest(measured);
  await measured.terminate('measured');
  // The rejected update's task is scheduled and started after it: started is event rest + 2.
  const started = await start(rest + 2);
  const run = t.env.client.workflow.getHandle(started.workflowId, started.firstExecutionRunId); // this run
  expect(await atRest(run)).toBe(rest);
  await expect(reject(run)).rejects.toThrow();
  expect(await statusOf(run)).toBe('RUNNING');
  expect(await atRest(run)).toBe(rest);
  await accept(run);
  await waitForValue(
    () => statusOf(run),
    (s) => s === 'CONTINUED_AS_NEW',
    20_000,
  );
  await atRest(t.env.client.workflow.getHandle(started.workflowId)); // the next run, begun
}

test('a pool run does not continue in a task whose only job was a rejected update; it replays', async () => {
  const start = (historyLimit: number) => {
    const input: PoolInput = { spec, historyLimit, state: { spec, blocks: {}, results: [] } };
    return t.env.client.workflow.start(POOL_WORKFLOW_TYPE, {
      workflowId: poolWorkflowId(uniqueName('carried')),
      taskQueue: t.taskQueue,
      args: [input],
    });
  };
  const request = { node: 'n1', incarnation: 'i1', family: 4 as const, spec };
  await rejectedAtTheLimit(
    start,
    (pool) => pool.executeUpdate(acquireBlockUpdate, { args: [{ ...request, node: 7 } as never] }),
    (pool) => pool.executeUpdate(acquireBlockUpdate, { args: [request] }),
  );
  await expectReplayed({ client: t.env.client, taskQueue: t.taskQueue }, 3);
});

test('a node run does not continue in a task whose only job was a rejected update; it replays', async () => {
  const start = (historyLimit: number) => {
    const input: NodeInput = {
      nodeName: uniqueName('n'),
      historyLimit,
      state: {
        incarnation: 'i1',
        retired: {},
        past: [],
        pools: {},
        tables: {},
        blockRequests: 0,
        results: [],
        trustCarried: true,
      },
    };
    return t.env.client.workflow.start(NODE_WORKFLOW_TYPE, {
      workflowId: nodeWorkflowId(input.nodeName),
      taskQueue: t.taskQueue,
      args: [input],
    });
  };
  await rejectedAtTheLimit(
    start,
    (node) => node.executeUpdate(batchUpdate, { args: [[{ made: 'up' } as never]] }),
    (node) => node.signal(nodeObservedSignal, {} as never), // an empty form: ignored
  );
  await expectReplayed({ client: t.env.client, taskQueue: t.taskQueue }, 6);
});
