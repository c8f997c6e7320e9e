// The node workflow continues-as-new under a long run of operations without losing an
// allocation or answering a repeated update differently.
import type { AddressGrant } from '../../domain/allocation';
import { PoolSpecSchema } from '../../domain/config';
import { nodeWorkflowId } from '../../domain/ids';
import { nodeStateQuery } from '../../workflows/node-messages';
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

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(ctx.temporal, 3);
});
