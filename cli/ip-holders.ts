// Who held an address when: each allocation of it paired with the release that ended it (from the
// node workflows' histories), and the holder at one moment. Pure: the histories are read elsewhere.
import { z } from 'zod';
import type { AddressEvent } from '../temporal/histories';

export interface Holding {
  owner: string;
  pod: string;
  podUid: string;
  node: string;
  /** The sandboxes (container ids) whose ADDs the owning lease answered. */
  sandboxes: string[];
  allocated?: Date;
  released?: Date;
  how: string;
}

/** `--at`: a moment with its zone, as RFC 3339 writes it (what `date -Is` and the UI print). */
export const MomentSchema = z.iso
  .datetime({ offset: true, message: 'must be a time with its zone, e.g. 2026-11-27T14:05:00Z' })
  .transform((text) => new Date(text));

/** The lease id's pod UID (`lease/<uid>/<ifName>`); empty for an owner that is no lease. */
export function podUidOf(owner: string): string {
  const [kind, uid] = owner.split('/');
  return kind === 'lease' && uid ? uid : '';
}

/** Pairs each allocation with the release that ended it (repeated updates count once). */
export function holdingsOf(events: AddressEvent[], node: string): Holding[] {
  const holdings: Holding[] = [];
  const holding = (e: AddressEvent, how: string): Holding => ({
    owner: e.owner,
    pod: '',
    podUid: podUidOf(e.owner),
    node,
    sandboxes: [],
    how,
  });
  for (const e of events) {
    const open = holdings.find((h) => h.owner === e.owner && !h.released);
    if (e.kind === 'release') {
      if (open) open.released = e.at;
      else holdings.push({ ...holding(e, 'release (allocation not in history)'), released: e.at });
    } else if (!open) {
      holdings.push({ ...holding(e, e.kind), allocated: e.at });
    }
  }
  return holdings;
}

/**
 * The holdings that held the address at `at`: allocated at or before it, released after it or
 * not yet. A holding whose allocation is not in history (before the horizon) counts from the start.
 */
export function heldAt(holdings: Holding[], at: Date): Holding[] {
  const t = at.getTime();
  return holdings.filter(
    (h) => (h.allocated?.getTime() ?? -Infinity) <= t && (h.released?.getTime() ?? Infinity) > t,
  );
}
