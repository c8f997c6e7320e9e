// A node's table and its pool's block table lost at once (the soak's operator terminates a lease,
// its node and the pool within seconds): each rebuilds from the other. The short soak of seed
// 821898649 met it: the restarted node read the pool while the pool was itself rebuilding (no
// blocks yet), the pool then recorded a sticky pod's pinned /32 for the node from the node's
// terminated run, and the node, without it, never returned it: the pod's successor was fenced for
// good. Here the real evidence activities run against real node and pool workflows.
import { MockActivityEnvironment } from '@temporalio/testing';
import { tableEvidenceActivities, type NodeEvidenceRequest } from '../../activities/table-evidence';
import { NetleaseConfigSchema, PoolSpecSchema, type PoolSpec } from '../../domain/config';
import { nodeWorkflowId, poolWorkflowId } from '../../domain/ids';
import type { NodeEvidence, PoolEvidence } from '../../domain/table-rebuild';
import { NODE_WORKFLOW_TYPE, nodeStateQuery } from '../../workflows/node-messages';
import { POOL_WORKFLOW_TYPE, poolStateQuery, type PoolInput } from '../../workflows/pool-messages';
import { expectReplayed } from '../harness/replay';
import { temporalAddress, uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { gate, workflowTestEnv, type WorkflowTestEnv } from '../harness/workflow-env';

const poolSpec = (name: string): PoolSpec =>
  PoolSpecSchema.parse({ name: uniqueName(name), cidrs: ['198.18.0.0/24'], blockSize: { ipv4: 29 } });
/** The pool whose own evidence waits for the test (its rebuild is under way meanwhile). */
const waitingPool = poolSpec('vouch-pool');
/** The pool rebuilt by the real activity while a node rebuilds. */
const rebuiltPool = poolSpec('vouch-node');
/** The node whose own evidence waits for the test. */
const waitingNode = uniqueName('vouch-n');
const poolEvidenceRead = gate();
const nodeEvidenceRead = gate();

let t: WorkflowTestEnv;
let real: ReturnType<typeof tableEvidenceActivities>;
beforeAll(async () => {
  t = await workflowTestEnv('wf-evidence');
  const config = NetleaseConfigSchema.parse({
    temporal: { address: temporalAddress(), taskQueue: t.taskQueue },
    pools: [waitingPool, rebuiltPool],
  });
  real = tableEvidenceActivities({ client: t.env.client, config });
  await t.worker({
    poolTableEvidence: async (request: { pool: string; forRun?: string }): Promise<PoolEvidence> => {
      if (request.pool !== waitingPool.name) return real.poolTableEvidence(request);
      await poolEvidenceRead.opened;
      return { held: [{ cidr: '198.18.0.2/32', node: 'n1', incarnation: 'i1' }], forRun: request.forRun };
    },
    nodeTableEvidence: async (request: NodeEvidenceRequest): Promise<NodeEvidence> => {
      if (request.nodeName === waitingNode) await nodeEvidenceRead.opened;
      return real.nodeTableEvidence(request);
    },
  });
});
afterAll(async () => t?.close());

const restarted = (spec: PoolSpec): PoolInput => ({
  spec,
  historyLimit: 1000,
  restartedAfter: 'a terminate (test)',
});

test("a node's rebuild reads a pool's blocks only once the pool's own rebuild is done", async () => {
  const pool = await t.env.client.workflow.start(POOL_WORKFLOW_TYPE, {
    workflowId: poolWorkflowId(waitingPool.name),
    taskQueue: t.taskQueue,
    args: [restarted(waitingPool)],
  });
  expect((await pool.query(poolStateQuery)).trustCarried).toBe(false);

  const env = new MockActivityEnvironment();
  let beats = 0;
  env.on('heartbeat', () => beats++);
  let settled = false;
  const read = env
    .run(real.nodeTableEvidence, { nodeName: 'n1', owners: [], pools: [waitingPool.name] })
    .finally(() => (settled = true));
  // It beats while the pool rebuilds: it waits rather than answering from the half-built table.
  await waitForValue(
    () => Promise.resolve(beats),
    (n) => n >= 2,
    15_000,
  );
  expect(settled).toBe(false);

  poolEvidenceRead.open();
  const evidence = (await read) as NodeEvidence;
  expect(evidence.blocks).toEqual([{ pool: waitingPool.name, cidr: '198.18.0.2/32', incarnation: 'i1' }]);
  await pool.terminate('test done');
});

test('a pool rebuilt while a node rebuilds records what its last run recorded for the node, and the node gets it', async () => {
  const recorded = { '198.18.0.8/29': { node: waitingNode, incarnation: 'i1' } };
  const first = await t.env.client.workflow.start(POOL_WORKFLOW_TYPE, {
    workflowId: poolWorkflowId(rebuiltPool.name),
    taskQueue: t.taskQueue,
    args: [
      {
        ...restarted(rebuiltPool),
        restartedAfter: undefined,
        state: { spec: rebuiltPool, results: [], blocks: recorded, trustCarried: true },
      },
    ],
  });
  expect((await first.query(poolStateQuery)).blocks).toEqual(recorded);
  await first.terminate('the operator (test)');

  // The node's run started again too: it rebuilds, waiting for the test, its table empty meanwhile.
  const node = await t.env.client.workflow.start(NODE_WORKFLOW_TYPE, {
    workflowId: nodeWorkflowId(waitingNode),
    taskQueue: t.taskQueue,
    args: [{ nodeName: waitingNode, historyLimit: 1000, restartedAfter: 'a terminate (test)' }],
  });
  expect((await node.query(nodeStateQuery)).trustCarried).toBe(false);

  const second = await t.env.client.workflow.start(POOL_WORKFLOW_TYPE, {
    workflowId: poolWorkflowId(rebuiltPool.name),
    taskQueue: t.taskQueue,
    args: [restarted(rebuiltPool)],
  });
  const rebuilt = await waitForValue(
    () => second.query(poolStateQuery),
    (s) => s.trustCarried === true,
    30_000,
  );
  expect(rebuilt.blocks).toEqual(recorded);

  // The node's rebuild, once it reads the pool, has the block: both tables agree.
  nodeEvidenceRead.open();
  const table = await waitForValue(
    () => node.query(nodeStateQuery),
    (s) => s.trustCarried === true,
    30_000,
  );
  expect(table.tables[rebuiltPool.name]?.blocks.map((b) => [b.cidr, b.incarnation])).toEqual([
    ['198.18.0.8/29', 'i1'],
  ]);
  await node.terminate('test done');
  await second.terminate('test done');
});

test('histories of this file replay without nondeterminism', async () => {
  // Two pool runs of each pool and the node's run, each closed by a terminate.
  await expectReplayed({ client: t.env.client, taskQueue: t.taskQueue }, 4);
});
