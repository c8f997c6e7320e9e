// `netleasectl nodes` and `netleasectl pools`: incarnations, blocks, and used/free/cooling
// addresses per block, per node and per pool.
import { blockUsage, type BlockUsage } from '../domain/allocation';
import { nodeWorkflowId } from '../domain/ids';
import { knownNodes, knownPools } from '../temporal/visibility';
import { workflowIsGone } from '../temporal/workflow-gone';
import { nodeStateQuery, type NodeState } from '../workflows/node-messages';
import { poolStateQuery, type PoolState } from '../workflows/pool-messages';
import { onlyOptions, positionals, type CommandLine } from './args';
import type { Context, Run } from './context';
import { emit, table } from './output';
import { mapLimited } from '../domain/map-limited';

export interface NodeView {
  name: string;
  workflowId: string;
  state?: NodeState;
  error?: string;
  blocks: Array<BlockUsage & { pool: string; live: boolean }>;
}

/**
 * The open node workflows visibility lists, and those of `alsoNamed` it does not list yet (it
 * lags: read by their ids, when open), by name.
 */
export async function readNodes(context: Context, alsoNamed: string[] = []): Promise<NodeView[]> {
  const listed = await knownNodes(context.client, context.taskQueue);
  const unlisted = [...new Set(alsoNamed)].filter((name) => !listed.some((n) => n.name === name));
  const open = await mapLimited(unlisted, 8, (name) => workflowIsGone(context.client, nodeWorkflowId(name)));
  const nodes = [
    ...listed.map((n) => ({ name: n.name || n.workflowId.replace(/^node\//, ''), workflowId: n.workflowId })),
    ...unlisted.filter((_, i) => !open[i]).map((name) => ({ name, workflowId: nodeWorkflowId(name) })),
  ];
  const now = Date.now();
  const views = await mapLimited(nodes, 8, async (n): Promise<NodeView> => {
    try {
      const state = await context.client.workflow.getHandle(n.workflowId).query(nodeStateQuery);
      const blocks = Object.entries(state.tables).flatMap(([pool, t]) => {
        const spec = state.pools[pool];
        return spec
          ? blockUsage(t, spec, now).map((b) => ({ ...b, pool, live: b.incarnation === state.incarnation }))
          : [];
      });
      return { ...n, state, blocks };
    } catch (err) {
      return { ...n, error: (err as Error).message, blocks: [] };
    }
  });
  return views.sort((a, b) => a.name.localeCompare(b.name));
}

const sum = (blocks: BlockUsage[], key: 'capacity' | 'used' | 'cooling' | 'free') =>
  blocks.reduce((total, b) => total + b[key], 0);

export function nodesCommand(line: CommandLine): Run {
  onlyOptions(line, []);
  positionals(line, []);
  return async (context: Context) => {
    const nodes = await readNodes(context);
    const value = nodes.map((n) => ({
      name: n.name,
      workflowId: n.workflowId,
      incarnation: n.state?.incarnation ?? '',
      retired: n.state?.retired ?? {},
      past: n.state?.past ?? [],
      blocks: n.blocks,
      used: sum(n.blocks, 'used'),
      free: sum(n.blocks, 'free'),
      cooling: sum(n.blocks, 'cooling'),
      ...(n.error ? { error: n.error } : {}),
    }));
    emit(context.output, value, () => {
      const summary = table(
        ['NODE', 'INCARNATION', 'RETIRED', 'BLOCKS', 'USED', 'FREE', 'COOLING'],
        value.map((n) => [
          n.name,
          n.incarnation || (n.error ? `error: ${n.error}` : '(none)'),
          Object.keys(n.retired).join(',') || '',
          n.blocks.length,
          n.used,
          n.free,
          n.cooling,
        ]),
      );
      const blocks = table(
        ['NODE', 'POOL', 'BLOCK', 'INCARNATION', 'USED', 'FREE', 'COOLING'],
        nodes.flatMap((n) =>
          n.blocks.map((b) => [
            n.name,
            b.pool,
            b.block,
            `${b.incarnation || "''"}${b.live ? '' : ' (not current)'}`,
            b.used,
            b.free,
            b.cooling,
          ]),
        ),
      );
      return `${summary}\nBlocks:\n${blocks}`;
    });
    return 0;
  };
}

export async function readPools(
  context: Context,
): Promise<Array<{ workflowId: string; state?: PoolState; error?: string }>> {
  const ids = await knownPools(context.client, context.taskQueue);
  return mapLimited(ids.sort(), 8, async (workflowId) => {
    try {
      return { workflowId, state: await context.client.workflow.getHandle(workflowId).query(poolStateQuery) };
    } catch (err) {
      return { workflowId, error: (err as Error).message };
    }
  });
}

export function poolsCommand(line: CommandLine): Run {
  onlyOptions(line, []);
  positionals(line, []);
  return async (context: Context) => {
    const [pools, nodes] = await Promise.all([readPools(context), readNodes(context)]);
    const value = pools.map((p) => {
      const name = p.state?.spec.name ?? p.workflowId.replace(/^pool\//, '');
      const blocks = nodes.flatMap((n) => n.blocks.filter((b) => b.pool === name));
      const owners = Object.values(p.state?.blocks ?? {});
      return {
        name,
        workflowId: p.workflowId,
        cidrs: p.state?.spec.cidrs ?? [],
        blocks: Object.entries(p.state?.blocks ?? {}).map(([block, owner]) => ({ block, ...owner })),
        nodes: [...new Set(owners.map((o) => o.node))].sort(),
        used: sum(blocks, 'used'),
        free: sum(blocks, 'free'),
        cooling: sum(blocks, 'cooling'),
        ...(p.error ? { error: p.error } : {}),
      };
    });
    emit(context.output, value, () => {
      const summary = table(
        ['POOL', 'CIDRS', 'BLOCKS', 'NODES', 'USED', 'FREE', 'COOLING'],
        value.map((p) => [
          p.name,
          p.cidrs.join(','),
          p.blocks.length,
          p.nodes.length,
          p.used,
          p.free,
          p.cooling,
        ]),
      );
      const blocks = table(
        ['POOL', 'BLOCK', 'NODE', 'INCARNATION'],
        value.flatMap((p) => p.blocks.map((b) => [p.name, b.block, b.node, b.incarnation || "''"])),
      );
      return `${summary}\nBlocks:\n${blocks}`;
    });
    return 0;
  };
}
