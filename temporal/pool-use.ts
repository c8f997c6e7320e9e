// Each pool's use per family as the NetleasePool status shows it, read from Temporal in one pass:
// the open node workflows' tables (the usage of each block of the pool) and the leaks among their
// owners. The computation is domain/pool-use's, which `netleasectl pools` shows too.
import type { Client } from '@temporalio/client';
import { blockUsage } from '../domain/allocation';
import type { PoolSpec } from '../domain/config';
import { poolUse, type FamilyUse } from '../domain/pool-use';
import { nodeStateQuery, type NodeState } from '../workflows/node-messages';
import { findLeaks } from './leaks';
import { knownNodes, leaseExecutions } from './visibility';
import { unlessGone } from './workflow-gone';

/** The open leases' ids: an owner outside them is confirmed closed by findLeaks before it counts. */
export async function openLeaseIds(client: Client, taskQueue: string): Promise<Set<string>> {
  return new Set((await leaseExecutions(client, taskQueue, { open: true })).map((l) => l.workflowId));
}

/** pool name → its use per family, for each of `pools`. */
export async function readPoolUse(
  client: Client,
  taskQueue: string,
  pools: PoolSpec[],
): Promise<Map<string, FamilyUse[]>> {
  const nodes = await knownNodes(client, taskQueue);
  const states: NodeState[] = [];
  for (const node of nodes) {
    const state = await unlessGone(
      () => client.workflow.getHandle(node.workflowId).query(nodeStateQuery),
      undefined,
    );
    if (state) states.push(state);
  }
  const names = nodes.map((n) => n.name || n.workflowId.replace(/^node\//, ''));
  const leaks = await findLeaks(client, names, await openLeaseIds(client, taskQueue));
  const now = Date.now();
  return new Map(
    pools.map((spec) => {
      const blocks = states.flatMap((state) => {
        const table = state.tables[spec.name];
        return table ? blockUsage(table, state.pools[spec.name] ?? spec, now) : [];
      });
      const leaked = leaks.filter((l) => l.pool === spec.name).flatMap((l) => l.families);
      return [spec.name, poolUse(spec, blocks, leaked)];
    }),
  );
}
