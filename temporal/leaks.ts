// Addresses whose lease workflow closed without returning them: found in the open node workflows'
// tables, each owner confirmed closed by its id (visibility lags). The reconciler collects them
// (activities/leaks); the pools' use counts them (temporal/pool-use).
import type { Client } from '@temporalio/client';
import type { Family } from '../domain/cidr';
import { nodeWorkflowId } from '../domain/ids';
import { nodeStateQuery } from '../workflows/node-messages';
import { unlessGone } from './workflow-gone';

/** A table owner whose lease workflow is closed. */
export interface Leak {
  node: string;
  owner: string;
  pool: string;
  podUid: string;
  /** The family of each address it holds. */
  families: Family[];
  /** The closed run, and how it closed. */
  run: string;
  status: string;
}

/** The owners of every open node's tables whose lease workflow is not open (by id, not visibility). */
export async function findLeaks(client: Client, nodes: string[], openLeases: Set<string>): Promise<Leak[]> {
  const leaks: Leak[] = [];
  for (const node of nodes) {
    const state = await unlessGone(
      () => client.workflow.getHandle(nodeWorkflowId(node)).query(nodeStateQuery),
      undefined,
    );
    const owners = new Map<string, { pool: string; podUid: string; families: Family[] }>();
    for (const [pool, table] of Object.entries(state?.tables ?? {}))
      for (const allocation of Object.values(table.allocations)) {
        if (openLeases.has(allocation.owner)) continue;
        const owner = owners.get(allocation.owner) ?? { pool, podUid: allocation.podUid, families: [] };
        owner.families.push(allocation.family);
        owners.set(allocation.owner, owner);
      }
    for (const [owner, { pool, podUid, families }] of owners) {
      const run = await unlessGone(() => client.workflow.getHandle(owner).describe(), undefined);
      if (run?.status.name === 'RUNNING') continue; // visibility had not listed it yet
      leaks.push({
        node,
        owner,
        pool,
        podUid,
        families,
        run: run?.runId ?? 'none',
        status: run?.status.name ?? 'NOT_FOUND',
      });
    }
  }
  return leaks;
}
