// The pool workflow while it rebuilds its blocks (a run started again after a terminate): a block
// given back or moved meanwhile is refused as retryable "rebuilding", never answered "none
// returned" from a half-built table (the soak: the node dropped its pinned block, the rebuild had
// read it in the node's table already, and the sticky pod waited behind the fence for good).
import { ApplicationFailure } from '@temporalio/common';
import { blockActivities } from '../../activities/blocks';
import { NetleaseConfigSchema, PoolSpecSchema } from '../../domain/config';
import { poolWorkflowId } from '../../domain/ids';
import { FailureType } from '../../domain/lease';
import type { PoolEvidence } from '../../domain/table-rebuild';
import {
  acquireBlocksUpdate,
  moveBlocksUpdate,
  POOL_WORKFLOW_TYPE,
  poolStateQuery,
  rebuildPoolUpdate,
  returnBlocksUpdate,
  type PoolInput,
} from '../../workflows/pool-messages';
import { expectReplayed } from '../harness/replay';
import { temporalAddress, uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { gate, updateFailureType, workflowTestEnv, type WorkflowTestEnv } from '../harness/workflow-env';

const spec = PoolSpecSchema.parse({
  name: uniqueName('rebuilt'),
  cidrs: ['198.18.0.0/24'],
  blockSize: { ipv4: 29 },
});
/** The nodes' tables as the rebuild reads them: a pinned /32 and a pool block of incarnation i1. */
const held = [
  { cidr: '198.18.0.2/32', node: 'n1', incarnation: 'i1' },
  { cidr: '198.18.0.8/29', node: 'n1', incarnation: 'i1' },
];
const evidenceRead = gate();

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('wf-pool');
  await t.worker({
    poolTableEvidence: async ({ forRun }: { forRun?: string }): Promise<PoolEvidence> => {
      await evidenceRead.opened;
      return { held, forRun };
    },
  });
});
afterAll(async () => t?.close());

test('a block given back or moved while the pool rebuilds is refused as retryable, then taken once rebuilt', async () => {
  const input: PoolInput = { spec, historyLimit: 1000, restartedAfter: 'a terminate (test)' };
  const pool = await t.env.client.workflow.start(POOL_WORKFLOW_TYPE, {
    workflowId: poolWorkflowId(spec.name),
    taskQueue: t.taskQueue,
    args: [input],
  });
  const giveBack = (updateId: string) =>
    pool.executeUpdate(returnBlocksUpdate, {
      args: [{ node: 'n1', incarnation: 'i1', blocks: ['198.18.0.2/32'] }],
      updateId,
    });
  const move = (updateId: string) =>
    pool.executeUpdate(moveBlocksUpdate, {
      args: [{ node: 'n1', from: 'i1', to: 'i2', blocks: ['198.18.0.8/29'] }],
      updateId,
    });

  // The rebuild (begun in the run's first task) waits for its evidence: both changes are refused.
  expect(updateFailureType(await giveBack('early-return').catch((err: unknown) => err))).toBe(
    FailureType.tableRebuilding,
  );
  expect(updateFailureType(await move('early-move').catch((err: unknown) => err))).toBe(
    FailureType.tableRebuilding,
  );
  const config = NetleaseConfigSchema.parse({
    temporal: { address: temporalAddress(), taskQueue: t.taskQueue },
    pools: [spec],
  });
  const activity = blockActivities({ client: t.env.client, config });
  const refused = await activity
    .returnBlocks({
      pool: spec.name,
      node: 'n1',
      incarnation: 'i1',
      blocks: ['198.18.0.2/32'],
      updateId: 'a1',
      pinned: true,
    })
    .catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(ApplicationFailure);
  expect((refused as ApplicationFailure).type).toBe(FailureType.tableRebuilding);
  expect((refused as ApplicationFailure).nonRetryable).toBe(false);
  expect(Object.keys((await pool.query(poolStateQuery)).blocks)).toEqual([]);

  evidenceRead.open();
  await waitForValue(
    () => pool.query(poolStateQuery),
    (s) => Object.keys(s.blocks).length === 2,
    15_000,
  );
  // Asked again (the activity's retry), the rebuilt table answers: the block goes back, the other moves.
  expect(await giveBack('early-return')).toEqual(['198.18.0.2/32']);
  expect(await move('early-move')).toEqual(['198.18.0.8/29']);
  expect((await pool.query(poolStateQuery)).blocks).toEqual({
    '198.18.0.8/29': { node: 'n1', incarnation: 'i2' },
  });
  await pool.terminate('test done');
});

test("a node's named blocks the pool recorded before its incarnation was known go back and move", async () => {
  // What a node run that rebuilt before it observed its Node left in the pool (the soak: a pinned
  // block recorded with incarnation '' never went back, and fenced its address from other nodes).
  const unobserved = { node: 'n1', incarnation: '' };
  const input: PoolInput = {
    spec: { ...spec, name: uniqueName('unobserved') },
    historyLimit: 1000,
    state: {
      spec,
      results: [],
      blocks: {
        '198.18.0.3/32': unobserved,
        '198.18.0.16/29': unobserved,
        '198.18.0.32/29': unobserved,
        '198.18.0.24/29': { node: 'n2', incarnation: '' },
      },
    },
  };
  const pool = await t.env.client.workflow.start(POOL_WORKFLOW_TYPE, {
    workflowId: poolWorkflowId(input.spec.name),
    taskQueue: t.taskQueue,
    args: [input],
  });
  const giveBack = (blocks?: string[]) =>
    pool.executeUpdate(returnBlocksUpdate, {
      args: [{ node: 'n1', incarnation: 'i1', ...(blocks ? { blocks } : {}) }],
    });
  // Unnamed (all of i1's): '' blocks are not known to be i1's, and stay.
  expect(await giveBack()).toEqual([]);
  // Named by the node: its own go back; another node's does not.
  expect(await giveBack(['198.18.0.3/32', '198.18.0.24/29'])).toEqual(['198.18.0.3/32']);
  expect(
    await pool.executeUpdate(moveBlocksUpdate, {
      args: [{ node: 'n1', from: 'i1', to: 'i2', blocks: ['198.18.0.16/29'] }],
    }),
  ).toEqual(['198.18.0.16/29']);
  expect((await pool.query(poolStateQuery)).blocks).toEqual({
    '198.18.0.16/29': { node: 'n1', incarnation: 'i2' },
    '198.18.0.32/29': unobserved,
    '198.18.0.24/29': { node: 'n2', incarnation: '' },
  });
  await pool.terminate('test done');
});

test('a table not vouched for (a reset run) hands out nothing: no block stays recorded for a node told no', async () => {
  // The 45-minute soak: a reset run reapplied a node's request that the run before the reset had
  // answered; cut on the old table and refused "not verified", its block stayed the node's for good.
  const name = uniqueName('reset');
  const input: PoolInput = {
    spec: { ...spec, name },
    historyLimit: 1000,
    state: { spec: { ...spec, name }, results: [], blocks: {}, trustCarried: false },
  };
  const pool = await t.env.client.workflow.start(POOL_WORKFLOW_TYPE, {
    workflowId: poolWorkflowId(name),
    taskQueue: t.taskQueue,
    args: [input],
  });
  const ask = () =>
    pool.executeUpdate(acquireBlocksUpdate, {
      args: [[{ id: 'asked-once', node: 'n2', incarnation: 'j1', family: 4, spec: input.spec }]],
    });
  const [refused] = await ask();
  expect(refused && 'failure' in refused && refused.failure.type).toBe(FailureType.tableUnverified);
  expect((await pool.query(poolStateQuery)).blocks).toEqual({});

  evidenceRead.open();
  const { runId } = await pool.describe();
  await pool.executeUpdate(rebuildPoolUpdate, { args: [{ forRun: runId }] });
  // The nodes' tables are the table now: n2, which took nothing, is recorded for nothing.
  const rebuilt = (await pool.query(poolStateQuery)).blocks;
  expect(Object.keys(rebuilt).sort()).toEqual(held.map((h) => h.cidr).sort());
  // Asked again (its activity's retry), it gets a block of the verified table, recorded as answered.
  const [granted] = await ask();
  const block = granted && 'block' in granted ? granted.block : undefined;
  expect(block).toBeDefined();
  expect((await pool.query(poolStateQuery)).blocks[block ?? '']).toEqual({ node: 'n2', incarnation: 'j1' });
  await pool.terminate('test done');
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed({ client: t.env.client, taskQueue: t.taskQueue }, 3);
});
