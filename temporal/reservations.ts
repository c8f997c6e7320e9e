// A StatefulSet ordinal's sticky addresses (domain/sticky-addresses), as its pool workflow keeps
// them: reserved at the first ADD of the ordinal, the same ones at every later ADD, ended once
// idle past the pool's keep time or once their StatefulSet is deleted.
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { poolWorkflowId } from '../domain/ids';
import type { Reservations } from '../domain/sticky-addresses';
import { endReservationsUpdate, reservationsQuery, reserveAddressesUpdate } from '../workflows/pool-messages';

/** The ordinal's addresses, reserved now if it has none (a fresh update id: a later ADD asks again). */
export const reservedAddresses = (client: Client, pool: string, key: string): Promise<string[]> =>
  client.workflow
    .getHandle(poolWorkflowId(pool))
    .executeUpdate(reserveAddressesUpdate, { args: [{ key }], updateId: `reserve/${randomUUID()}` });

/** The pool's reservations; none when its workflow is not there (it is started again elsewhere). */
export async function poolReservations(client: Client, pool: string): Promise<Reservations> {
  try {
    return await client.workflow.getHandle(poolWorkflowId(pool)).query(reservationsQuery);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return {};
    throw err;
  }
}

/** Ends the idle reservations of these deleted StatefulSets: the keys that ended. */
export const endReservations = (client: Client, pool: string, statefulSets: string[]): Promise<string[]> =>
  client.workflow.getHandle(poolWorkflowId(pool)).executeUpdate(endReservationsUpdate, {
    args: [{ statefulSets }],
    updateId: `end-reservations/${randomUUID()}`,
  });
