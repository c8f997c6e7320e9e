// Many nodes wanting their first blocks at once (a cluster coming up, the scale simulation's
// fill): acquireBlock calls from the control worker, as node workflows make them, all answered
// with distinct blocks and none refused by the server's limit of 10 in-flight updates on the one
// pool workflow (before batching, such a burst was refused and retried with back-off: hand-outs
// took seconds, docs/benchmarks.md, "Scale").
import { performance } from 'node:perf_hooks';
import { blockActivities, type AcquireBlockInput } from '../../activities/blocks';
import { acquireBlockUpdateId, poolWorkflowId } from '../../domain/ids';
import { poolStateQuery } from '../../workflows/pool-messages';
import { countingClient, rejections } from '../harness/counting-client';
import { expectReplayed } from '../harness/replay';
import { testConfig, uniqueName, withControlWorker } from '../harness/temporal';

const NODES = 40;
const ctx = withControlWorker('pool-burst');

test(`${NODES} nodes' first IPv4 and IPv6 blocks at once: distinct, none refused`, async () => {
  const config = testConfig(ctx.temporal.taskQueue);
  const pool = config.pools[0];
  if (!pool) throw new Error('test config has no pool');
  const { client, failures } = await countingClient();
  try {
    const { acquireBlock } = blockActivities({ client, config });
    const input = (node: string, family: 4 | 6): AcquireBlockInput => ({
      pool,
      node,
      incarnation: 'uid-1',
      family,
      updateId: acquireBlockUpdateId(node, 'uid-1', family, family === 4 ? 1 : 2),
    });
    const nodes = Array.from({ length: NODES }, () => uniqueName('n'));
    const started = performance.now();
    const blocks = await Promise.all(
      nodes.flatMap((node) => [acquireBlock(input(node, 4)), acquireBlock(input(node, 6))]),
    );
    const ms = performance.now() - started;
    process.stdout.write(
      `\npool-burst: ${blocks.length} hand-outs in ${Math.round(ms)} ms, ` +
        `${rejections(failures).length} refused updates (${failures.length} failed calls)\n`,
    );
    expect(rejections(failures)).toEqual([]);
    expect(new Set(blocks).size).toBe(2 * NODES);
    // A repeated call (an activity retried after its answer was lost) gets the same block.
    expect(await acquireBlock(input(nodes[0] as string, 4))).toBe(blocks[0]);
    const state = await client.workflow.getHandle(poolWorkflowId(pool.name)).query(poolStateQuery);
    expect(Object.keys(state.blocks).sort()).toEqual([...blocks].sort());
  } finally {
    await client.connection.close();
  }
  await expectReplayed(ctx.temporal, 1);
});
