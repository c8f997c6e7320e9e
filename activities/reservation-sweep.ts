// The reconciler's sweep of sticky reservations: those of StatefulSets deleted from the cluster
// end once idle, not after the pool's keep time (issue 29: "until the StatefulSet is deleted").
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { NetleaseConfig } from '../domain/config';
import { FailureType } from '../domain/lease';
import { reservedStatefulSets } from '../domain/sticky-addresses';
import type { StatefulSetReader } from '../kubernetes/statefulsets';
import { endReservations, poolReservations } from '../temporal/reservations';

/** How many reservations ended, over every pool the control worker serves. */
export async function sweepReservations(
  client: Client,
  config: NetleaseConfig,
  statefulSets: StatefulSetReader,
): Promise<number> {
  let ended = 0;
  for (const { name } of config.pools) {
    const reservations = await poolReservations(client, name);
    const deleted = await statefulSets.deleted(reservedStatefulSets(reservations));
    if (deleted.length === 0) continue;
    try {
      ended += (await endReservations(client, name, deleted)).length;
    } catch (err) {
      // Rebuilding its blocks, or closed (started again by the reconciler): the next sweep judges.
      const rebuilding = (err as { cause?: { type?: string } }).cause?.type === FailureType.tableRebuilding;
      if (!rebuilding && !(err instanceof WorkflowNotFoundError)) throw err;
    }
    Context.current().heartbeat({ what: 'reservations' });
  }
  return ended;
}
