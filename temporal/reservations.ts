// A StatefulSet ordinal's sticky addresses (domain/sticky-addresses), as its pool workflow keeps
// them: reserved at the first ADD of the ordinal, the same ones at every later ADD.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { poolWorkflowId } from '../domain/ids';
import { reserveAddressesUpdate } from '../workflows/pool-messages';

/** The ordinal's addresses, reserved now if it has none (a fresh update id: a later ADD asks again). */
export const reservedAddresses = (client: Client, pool: string, key: string): Promise<string[]> =>
  client.workflow
    .getHandle(poolWorkflowId(pool))
    .executeUpdate(reserveAddressesUpdate, { args: [{ key }], updateId: `reserve/${randomUUID()}` });
