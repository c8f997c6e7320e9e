// The node workflow's edges with its activities replaced: a released address cools down before
// it is handed out again; a compensation that waits for a lease survives continue-as-new.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import type { AcquireBlockInput, ReturnBlocksInput } from '../../activities/blocks';
import { PoolSpecSchema } from '../../domain/config';
import { allocateUpdateId, leaseWorkflowId, nodeWorkflowId, releaseUpdateId } from '../../domain/ids';
import { FailureType, type LeaseStart } from '../../domain/lease';
import { LEASE_WORKFLOW_TYPE, leaseStateQuery } from '../../workflows/lease-messages';
import {
  allocateUpdate,
  NODE_WORKFLOW_TYPE,
  nodeObservedSignal,
  nodeStateQuery,
  releaseUpdate,
} from '../../workflows/node-messages';
import { waitFor } from '../../tools/processes';
import { expectReplayed } from '../harness/replay';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { workflowTestEnv, type WorkflowTestEnv } from '../harness/workflow-env';

const pool = PoolSpecSchema.parse({ name: 'p', cidrs: ['198.18.0.0/24'], blockSize: { ipv4: 29 } });
/** Blocks handed out by the stand-in pool: 198.18.0.0/29, 198.18.0.8/29, ... */
let blocksHanded = 0;
const returnedBlocks: ReturnBlocksInput[] = [];

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('wf-node');
  await t.worker({
    acquireBlock: async (input: AcquireBlockInput) => {
      if (input.pool.name === 'one-block' && blocksHanded > 0)
        throw ApplicationFailure.nonRetryable('no block left', FailureType.exhausted);
      return `198.18.0.${8 * blocksHanded++}/29`;
    },
    returnBlocks: async (input: ReturnBlocksInput) => {
      returnedBlocks.push(input);
      return input.blocks ?? [];
    },
    // The stand-in lease below never gets its addresses and never lets go (until cancelled).
    produceAddresses: () => Context.current().cancelled as Promise<never>,
    returnAddresses: () => Context.current().cancelled as Promise<never>,
  });
});
afterAll(async () => t?.close());

function nodeClient(nodeName: string, historyLimit = 5000) {
  const workflowId = nodeWorkflowId(nodeName);
  const start = () =>
    new WithStartWorkflowOperation(NODE_WORKFLOW_TYPE, {
      workflowId,
      taskQueue: t.taskQueue,
      args: [{ nodeName, historyLimit }],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
  return {
    handle: t.env.client.workflow.getHandle(workflowId),
    allocate: (owner: string, spec = pool, incarnation = '') =>
      t.env.client.workflow
        .executeUpdateWithStart(allocateUpdate, {
          args: [{ owner, podUid: owner, pool: spec, incarnation, run: 'r' }],
          updateId: allocateUpdateId(owner, 'r'),
          startWorkflowOperation: start(),
        })
        .then((grants) => grants.map((g) => g.address)),
    release: (owner: string, cooldownMs: number, spec = pool) =>
      t.env.client.workflow.getHandle(workflowId).executeUpdate(releaseUpdate, {
        args: [{ owner, pool: spec.name, cooldownMs, run: 'r' }],
        updateId: releaseUpdateId(owner, 'r'),
      }),
  };
}

test('a released address cools down: not handed out again until its cooldown ends', async () => {
  const spec = PoolSpecSchema.parse({ name: 'one-block', cidrs: ['198.18.0.0/24'], blockSize: { ipv4: 29 } });
  blocksHanded = 0;
  const node = nodeClient(uniqueName('cool'));
  const first = await node.allocate('o1', spec); // /29: gateway .1, addresses .2-.6
  expect(first).toEqual(['198.18.0.2']);
  await node.release('o1', 2000, spec);
  const releasedAt = Date.now();
  for (const [i, address] of ['198.18.0.3', '198.18.0.4', '198.18.0.5', '198.18.0.6'].entries())
    expect(await node.allocate(`o${i + 2}`, spec)).toEqual([address]);
  // Only the cooling address is left, and the pool has no other block: refused while it cools.
  const refused = await node.allocate('o6', spec).catch((err: unknown) => err);
  expect(Date.now()).toBeLessThan(releasedAt + 2000);
  expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
  expect(((refused as WorkflowUpdateFailedError).cause as ApplicationFailure).type).toBe(
    FailureType.exhausted,
  );

  expect(await waitFor(() => Date.now() > releasedAt + 2000, 5000)).toBe(true);
  expect(await node.allocate('o7', spec)).toEqual(['198.18.0.2']);
});

test('compensation waiting for a lease continues across continue-as-new and then finishes', async () => {
  const nodeName = uniqueName('can');
  const node = nodeClient(nodeName, 100);
  const leaseStart: LeaseStart = {
    podUid: uniqueName('held'),
    podNamespace: 'ns',
    podName: 'held',
    ifName: 'eth0',
    nodeName,
    pool: pool.name,
    mode: 'ipam',
  };
  const owner = leaseWorkflowId(leaseStart.podUid, 'eth0');
  // A live lease that holds an address of incarnation A and will not give it back by itself.
  const lease = await t.env.client.workflow.start(LEASE_WORKFLOW_TYPE, {
    workflowId: owner,
    taskQueue: t.taskQueue,
    args: [leaseStart],
  });
  await node.allocate(owner, pool, 'uid-A');
  await node.handle.signal(nodeObservedSignal, { uid: 'uid-B' }); // A is retired: compensate
  await waitForValue(
    () => lease.query(leaseStateQuery),
    (s) => s.phase === 'Releasing',
    15_000,
  );

  const firstRun = (await node.handle.describe()).runId;
  for (let i = 0; (await node.handle.describe()).runId === firstRun && i < 60; i++)
    await node.allocate(`busy-${i}`, pool, 'uid-B');
  const next = await node.handle.query(nodeStateQuery);
  expect((await node.handle.describe()).runId).not.toBe(firstRun);
  expect(Object.keys(next.retired)).toEqual(['uid-A']);
  expect(Object.values(next.tables[pool.name]?.allocations ?? {}).map((a) => a.owner)).toContain(owner);

  await node.release(owner, 0); // the lease's address comes back: compensation can finish
  const done = await waitForValue(
    () => node.handle.query(nodeStateQuery),
    (s) => !s.retired['uid-A'],
    15_000,
  );
  expect(done.retired).toEqual({});
  expect(returnedBlocks.filter((r) => r.node === nodeName)).toEqual([
    expect.objectContaining({ incarnation: 'uid-A', blocks: [expect.stringMatching(/\/29$/)] }),
  ]);
  await lease.terminate('test done');
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed({ client: t.env.client, taskQueue: t.taskQueue }, 3);
});
