// Who holds a static address that another node's block covers (issue 29 item 2: "held: 11 until
// released, with the holder named"). The pool knows blocks, not pods: on its refusal the control
// worker reads the covering block's node table and the lease holding the address, so the answer
// names the pod an operator has to look at, or says that no pod holds it.
import type { Client } from '@temporalio/client';
import { overlappingBlock } from '../domain/blocks';
import { parsePrefix } from '../domain/cidr';
import { nodeWorkflowId, poolWorkflowId } from '../domain/ids';
import { pinnedBlockOf } from '../domain/static-addresses';
import { unlessGone } from '../temporal/workflow-gone';
import { leaseStateQuery } from '../workflows/lease-messages';
import { nodeStateQuery } from '../workflows/node-messages';
import { poolStateQuery } from '../workflows/pool-messages';

const query = <T>(call: () => Promise<T>): Promise<T | undefined> =>
  unlessGone(call, undefined).catch(() => undefined);

/** What holds `address` on the node whose block covers it; undefined when that cannot be read. */
export async function staticAddressHolder(
  client: Client,
  pool: string,
  address: string,
): Promise<string | undefined> {
  const blocks = (await query(() => client.workflow.getHandle(poolWorkflowId(pool)).query(poolStateQuery)))
    ?.blocks;
  const covering = blocks && overlappingBlock(Object.keys(blocks), parsePrefix(pinnedBlockOf(address)));
  const node = covering === undefined ? undefined : blocks?.[covering]?.node;
  if (!node) return undefined;
  const state = await query(() => client.workflow.getHandle(nodeWorkflowId(node)).query(nodeStateQuery));
  const table = state?.tables[pool];
  if (!table) return undefined;
  const allocation = table.allocations[address];
  if (allocation) {
    const lease = await query(() => client.workflow.getHandle(allocation.owner).query(leaseStateQuery));
    const pod = lease ? `pod ${lease.start.podNamespace}/${lease.start.podName} ` : 'pod ';
    return `held there by ${pod}(UID ${allocation.podUid}, lease ${allocation.owner})`;
  }
  const cooling = table.cooldowns[address];
  if (cooling !== undefined) return `released there, it cools down until ${new Date(cooling).toISOString()}`;
  return `no pod holds it there`;
}
