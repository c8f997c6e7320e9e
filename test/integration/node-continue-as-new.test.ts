// The node workflow continues-as-new under a long run of operations without losing an
// allocation or answering a repeated update differently; a static address's pinned block released
// before it continued goes back to the pool after its cooldown, from the new run.
import type { AddressGrant } from '../../domain/allocation';
import { PoolSpecSchema } from '../../domain/config';
import { nodeWorkflowId } from '../../domain/ids';
import { nodeStateQuery } from '../../workflows/node-messages';
import { poolStateQuery } from '../../workflows/pool-messages';
import { poolWorkflowId } from '../../domain/ids';
import { waitForValue } from '../harness/wait';
import { nodeOperations } from '../harness/node-operations';
import { expectReplayed } from '../harness/replay';
import { uniqueName, withControlWorker } from '../harness/temporal';

const pool = PoolSpecSchema.parse({
  name: uniqueName('can'),
  cidrs: ['198.18.0.0/20', 'fd00:18::/112'],
  blockSize: { ipv4: 27, ipv6: 123 },
});
const ctx = withControlWorker('node-can', () => ({ pools: [pool] }));

test('continue-as-new keeps allocations and remembered answers', async () => {
  const node = uniqueName('node');
  const workflowId = nodeWorkflowId(node);
  const run = 'run-1';
  const { client, taskQueue } = ctx.temporal;
  const ops = nodeOperations({ client, taskQueue, nodeName: node, historyLimit: 120 });
  const allocateFor = (owner: string) => ops.allocate({ owner, podUid: owner, pool, run });
  const releaseFor = (owner: string) => ops.release({ owner, pool: pool.name, cooldownMs: 0, run });

  const answers = new Map<string, AddressGrant[]>();
  const released = new Set<string>();
  for (let i = 0; i < 150; i++) {
    const owner = `lease/pod-${i}/eth0`;
    answers.set(owner, await allocateFor(owner));
    if (i % 3 === 0) {
      await releaseFor(owner);
      released.add(owner);
    }
  }

  const runs = [];
  for await (const run of ctx.temporal.client.workflow.list({ query: `WorkflowId = '${workflowId}'` }))
    runs.push(run.runId);
  expect(runs.length).toBeGreaterThanOrEqual(3);

  const state = await ctx.temporal.client.workflow.getHandle(workflowId).query(nodeStateQuery);
  const table = state.tables[pool.name];
  const held = new Map(Object.values(table?.allocations ?? {}).map((a) => [a.address, a.owner]));
  for (const [owner, grants] of answers) {
    for (const grant of grants) {
      if (released.has(owner)) expect(held.get(grant.address)).not.toBe(owner);
      else expect(held.get(grant.address)).toBe(owner);
    }
  }
  expect(held.size).toBe(2 * (150 - released.size));

  // Repeat old updates in the latest run: same answers, even for owners released since (a fresh
  // allocation would hand them a different address), and nothing new is allocated.
  for (const owner of ['lease/pod-0/eth0', 'lease/pod-1/eth0', 'lease/pod-99/eth0', 'lease/pod-149/eth0']) {
    expect(await allocateFor(owner)).toEqual(answers.get(owner));
  }
  const after = await ctx.temporal.client.workflow.getHandle(workflowId).query(nodeStateQuery);
  expect(Object.keys(after.tables[pool.name]?.allocations ?? {}).length).toBe(held.size);
}, 300_000);

test('a static address released while cooling down across continue-as-new: its pinned block goes back after', async () => {
  const node = uniqueName('node');
  const { client, taskQueue } = ctx.temporal;
  const ops = nodeOperations({ client, taskQueue, nodeName: node, historyLimit: 120 });
  const fixed = '198.18.15.100';
  const owner = 'lease/pod-fixed/eth0';
  const [v4] = await ops.allocate({ owner, podUid: 'fixed', pool, run: 'r', addresses: [fixed] });
  expect(v4).toMatchObject({ address: fixed, prefixLength: 27, gateway: '198.18.15.97' });
  const pinned = `${fixed}/32`;
  const poolBlocks = async () =>
    (await client.workflow.getHandle(poolWorkflowId(pool.name)).query(poolStateQuery)).blocks;
  expect((await poolBlocks())[pinned]).toMatchObject({ node });
  await ops.release({ owner, pool: pool.name, cooldownMs: 8000, run: 'r' });
  // Enough operations meanwhile that the node continues as new while the address cools down.
  const first = (await client.workflow.getHandle(nodeWorkflowId(node)).describe()).runId;
  for (let i = 0; i < 40; i++)
    await ops.allocate({ owner: `lease/p${i}/eth0`, podUid: `p${i}`, pool, run: 'r' });
  expect((await client.workflow.getHandle(nodeWorkflowId(node)).describe()).runId).not.toBe(first);
  expect((await poolBlocks())[pinned]).toMatchObject({ node }); // still cooling
  await waitForValue(poolBlocks, (blocks) => blocks[pinned] === undefined, 30_000);
  // The node drops the block from its table once the pool's answer is recorded: a moment later.
  const nodeBlocks = async () =>
    (await client.workflow.getHandle(nodeWorkflowId(node)).query(nodeStateQuery)).tables[pool.name]?.blocks ??
    [];
  const blocks = await waitForValue(nodeBlocks, (bs) => !bs.some((b) => b.cidr === pinned), 30_000);
  expect(blocks.map((b) => b.cidr)).not.toContain(pinned);
}, 120_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(ctx.temporal, 5);
});
