// Temporal visibility lists a workflow a moment after it starts: a test that hands leases to code
// which finds them through visibility (the reconciler, GC, netleasectl) waits until they are listed.
import type { Client } from '@temporalio/client';
import { knownLeases, type KnownLease } from '../../temporal/visibility';
import { waitForValue } from './wait';

/**
 * Waits until the open leases on `taskQueue` that visibility lists satisfy `listed`; throws if they
 * never do. 60 s: on the production server a test file beside visibility-lag.production (which
 * holds the visibility table locked for up to ~15 s on purpose) waits that long for its listing
 * (terminating.test failed a CI that way at 10 s).
 */
export async function untilListed(
  client: Client,
  taskQueue: string,
  listed: (leases: KnownLease[]) => boolean,
  timeoutMs = 60_000,
): Promise<void> {
  await waitForValue(
    () => knownLeases(client, taskQueue),
    listed,
    timeoutMs,
    100,
    'visibility to list the expected leases',
  );
}

/** The leases of all these pods are listed. */
export const podsListed =
  (...podUids: string[]) =>
  (leases: KnownLease[]): boolean =>
    podUids.every((uid) => leases.some((lease) => lease.podUid === uid));
