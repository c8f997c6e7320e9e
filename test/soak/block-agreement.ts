// Whether each pool and each node agree on the node's blocks once the run is quiet. A block the
// pool records for a node whose table lacks it is never returned (the short soak of seed 821898649:
// a sticky pod's pinned /32, its successor fenced for good); a block a node holds that the pool
// records for no node, or another, may be handed out twice. Only tables each side vouches for
// are compared: a closed node run, or one that rebuilds, takes its blocks from the pool.
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { unlessGone } from '../../temporal/workflow-gone';

const VouchedSchema = z.object({ trustCarried: z.boolean().optional() });
const PoolBlocksSchema = VouchedSchema.extend({
  blocks: z.record(z.string(), z.object({ node: z.string() })),
});
const NodeBlocksSchema = VouchedSchema.extend({
  tables: z.record(z.string(), z.object({ blocks: z.array(z.object({ cidr: z.string() })) })),
});

/** `state` of an open workflow run, or undefined when it is closed or absent. */
async function openState<T>(
  client: Client,
  workflowId: string,
  schema: z.ZodType<T>,
): Promise<T | undefined> {
  const handle = client.workflow.getHandle(workflowId);
  const open = await unlessGone(async () => (await handle.describe()).status.name === 'RUNNING', false);
  return open ? schema.parse(await handle.query('state')) : undefined;
}

/** Each disagreement, as a line of the soak's "left at the end". */
export async function blockDisagreements(
  client: Client,
  nodes: string[],
  pools: string[],
): Promise<string[]> {
  const tables = new Map<string, Map<string, Set<string>>>();
  for (const node of nodes) {
    const state = await openState(client, `node/${node}`, NodeBlocksSchema);
    if (!state || state.trustCarried === false) continue;
    tables.set(
      node,
      new Map(Object.entries(state.tables).map(([pool, t]) => [pool, new Set(t.blocks.map((b) => b.cidr))])),
    );
  }
  const left: string[] = [];
  for (const pool of pools) {
    const state = await openState(client, `pool/${pool}`, PoolBlocksSchema);
    if (!state || state.trustCarried === false) continue;
    for (const [cidr, { node }] of Object.entries(state.blocks)) {
      const held = tables.get(node);
      if (held && !held.get(pool)?.has(cidr))
        left.push(`pool ${pool} records block ${cidr} for ${node}, whose table lacks it`);
    }
    for (const [node, byPool] of tables)
      for (const cidr of byPool.get(pool) ?? [])
        if (state.blocks[cidr]?.node !== node)
          left.push(
            `${node} holds block ${cidr} that pool ${pool} records for ${state.blocks[cidr]?.node ?? 'no node'}`,
          );
  }
  return left;
}
