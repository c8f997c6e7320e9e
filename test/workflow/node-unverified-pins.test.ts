// A node run whose table is not verified (a reset run; a run carried from one) neither returns a
// pinned block nor trusts a release it answered before its rebuild. The 10,000-lifecycle soak (seed
// 1128202601) met both at once: an operator reset node/soak-node-0 while a sticky pod's lease was
// releasing; the reset run applied the reapplied release to its unverified table, returned the
// address's pinned /32 to the pool, and the pool handed it to the pod's successor on another node;
// the rebuild then gave the address back to the still-open lease, whose repeated release was
// answered "nothing" from memory; the address sat in two nodes' tables for 24 s.
import type { WorkflowHandle } from '@temporalio/client';
import type { ReturnBlocksInput } from '../../activities/blocks';
import { PoolSpecSchema } from '../../domain/config';
import { nodeWorkflowId, releaseUpdateId } from '../../domain/ids';
import type { NodeEvidence } from '../../domain/table-rebuild';
import {
  NODE_WORKFLOW_TYPE,
  batchUpdate,
  nodeStateQuery,
  rebuildUpdate,
  type NodeInput,
} from '../../workflows/node-messages';
import { expectReplayed } from '../harness/replay';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { workflowTestEnv, type WorkflowTestEnv } from '../harness/workflow-env';

const pool = PoolSpecSchema.parse({ name: 'p', cidrs: ['198.18.0.0/24'], blockSize: { ipv4: 29 } });
const STICKY = '198.18.0.200';
const PINNED = `${STICKY}/32`;
const OWNER = 'lease/db-1/eth0';
const returned: ReturnBlocksInput[] = [];

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('wf-pins');
  await t.worker({
    returnBlocks: async (input: ReturnBlocksInput) => {
      returned.push(input);
      return input.blocks ?? [];
    },
    // The rebuild finds the sticky pod's lease still open and holding its address.
    nodeTableEvidence: async ({ forRun }: { forRun?: string }): Promise<NodeEvidence> => ({
      pools: [pool],
      blocks: [{ pool: pool.name, cidr: PINNED, incarnation: '' }],
      leases: [{ owner: OWNER, podUid: 'db-1', pool: pool.name, addresses: [STICKY], asked: [STICKY] }],
      closed: [],
      cooldownMs: 0,
      forRun,
    }),
  });
});
afterAll(async () => t?.close());

/** A run carried from an unverified one, whose table has the pinned block and no allocation in it. */
const unverifiedInput = (nodeName: string): NodeInput => ({
  nodeName,
  historyLimit: 5000,
  state: {
    incarnation: '',
    retired: {},
    past: [],
    pools: { [pool.name]: pool },
    tables: {
      [pool.name]: { blocks: [{ cidr: PINNED, family: 4, incarnation: '' }], allocations: {}, cooldowns: {} },
    },
    blockRequests: 1,
    results: [],
    trustCarried: false,
  },
});

const release = (node: WorkflowHandle) =>
  node.executeUpdate(batchUpdate, {
    args: [
      [
        {
          kind: 'release',
          id: releaseUpdateId(OWNER, 'r1'),
          request: { owner: OWNER, pool: pool.name, cooldownMs: 0 },
        },
      ],
    ],
  });

/** Whether the run's history has scheduled a returnBlocks activity so far. */
async function returnScheduled(node: WorkflowHandle): Promise<boolean> {
  const history = await node.fetchHistory();
  return (history.events ?? []).some(
    (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'returnBlocks',
  );
}

test('an unverified table returns no pinned block, and a release it answered before its rebuild is done again after', async () => {
  const nodeName = uniqueName('pins');
  const node = await t.env.client.workflow.start(NODE_WORKFLOW_TYPE, {
    workflowId: nodeWorkflowId(nodeName),
    taskQueue: t.taskQueue,
    args: [unverifiedInput(nodeName)],
  });
  // Its first task has run (a query needs it): the old code returned the unheld pinned block there.
  expect(Object.keys((await node.query(nodeStateQuery)).tables[pool.name]?.allocations ?? {})).toEqual([]);
  // The lease's release, answered "unverified" by the table that lacks its allocation.
  const [before] = await release(node);
  expect(before && 'failure' in before ? before.failure.type : before).toBe('TableUnverified');
  expect(await returnScheduled(node)).toBe(false);

  // The control worker has it rebuild: the open lease gets its address back, in its pinned block.
  const report = await node.executeUpdate(rebuildUpdate, { args: [{ forRun: node.firstExecutionRunId }] });
  expect(report?.allocationsAdded).toEqual([STICKY]);
  const rebuilt = (await node.query(nodeStateQuery)).tables[pool.name];
  expect(rebuilt?.allocations[STICKY]?.owner).toBe(OWNER);
  expect(rebuilt?.blocks.map((b) => b.cidr)).toEqual([PINNED]);
  expect(await returnScheduled(node)).toBe(false);

  // The same release again: it frees the address now (not "nothing" from memory), and only then
  // does the pinned block go back.
  const [after] = await release(node);
  expect(after && 'grants' in after ? after.grants.map((g) => g.address) : after).toEqual([STICKY]);
  await waitForValue(
    () => Promise.resolve(returned.length),
    (n) => n > 0,
    15_000,
  );
  expect(returned.map((r) => r.blocks)).toEqual([[PINNED]]);
  expect((await node.query(nodeStateQuery)).tables[pool.name]?.blocks).toEqual([]);
  await node.terminate('test done');
}, 60_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed({ client: t.env.client, taskQueue: t.taskQueue }, 1);
});
