// Sticky StatefulSet addresses (domain/sticky-addresses): which pod is sticky and under what key,
// where the pool puts a new reservation (packed into the blocks holding reservations, never in a
// block a node holds), that no hand-out covers a reserved address, and when an idle one ends (its
// keep time, or its StatefulSet deleted).
import { freeBlock } from '../../domain/blocks';
import { PoolSpecSchema } from '../../domain/config';
import {
  expiredReservations,
  heldWithReservations,
  idleOfDeleted,
  nextExpiry,
  reservationOf,
  reservedStatefulSets,
  stickyCandidate,
  stickyKeyOf,
  type Reservations,
} from '../../domain/sticky-addresses';

const pool = PoolSpecSchema.parse({
  name: 'p',
  cidrs: ['10.0.0.0/24', 'fd00::/120'],
  blockSize: { ipv4: 28, ipv6: 124 },
  exclude: ['10.0.0.18'],
});
const pod = (name: string, statefulSet?: string, annotations?: Record<string, string>) => ({
  namespace: 'db',
  name,
  ...(statefulSet ? { statefulSet } : {}),
  ...(annotations ? { annotations } : {}),
});
const on = { 'netlease.io/sticky-addresses': 'true' };

test.each([
  ['a StatefulSet pod opted in by its annotation', pod('pg-3', 'pg', on), undefined, false, 'db/pg/3'],
  ['by its namespace', pod('pg-0', 'pg'), on, false, 'db/pg/0'],
  ['by its pool', pod('pg-12', 'pg'), undefined, true, 'db/pg/12'],
  [
    'its own "false" over the pool',
    pod('pg-1', 'pg', { 'netlease.io/sticky-addresses': 'false' }),
    on,
    true,
    undefined,
  ],
  ['not opted in', pod('pg-1', 'pg'), undefined, false, undefined],
  ['no StatefulSet', pod('web-1', undefined, on), undefined, true, undefined],
  ['a name without its ordinal', pod('pg-x', 'pg', on), undefined, false, undefined],
  ['another set’s name', pod('pgbouncer-1', 'pg', on), undefined, false, undefined],
  ['a set whose name has regex characters', pod('a.b-2', 'a.b', on), undefined, false, 'db/a.b/2'],
  ['a leading zero is no ordinal', pod('pg-01', 'pg', on), undefined, false, undefined],
])('%s: %j', (_what, p, namespace, poolSticky, key) => {
  expect(stickyKeyOf(p, namespace, poolSticky)).toBe(key);
});

test('new reservations: the first free address of a block no node holds, then packed beside it', () => {
  const blocks = { '10.0.0.0/28': { node: 'n1', incarnation: 'u' } };
  const reservations: Reservations = {};
  // 10.0.0.16/28: .16 network, .17 gateway, .18 excluded → .19, then .20, .21 …
  for (const [i, expected] of ['10.0.0.19', '10.0.0.20', '10.0.0.21'].entries()) {
    const address = stickyCandidate(blocks, reservations, pool, 4);
    expect(address).toBe(expected);
    reservations[`db/pg/${i}`] = { addresses: [address ?? ''] };
  }
  expect(stickyCandidate(blocks, reservations, pool, 6)).toBe('fd00::2');
  expect(reservationOf(reservations, '10.0.0.20')).toBe('db/pg/1');
  // No node is handed the block holding them: the next hand-out skips it.
  expect(freeBlock(heldWithReservations(blocks, reservations), pool, 4)).toBe('10.0.0.32/28');
  expect(freeBlock(blocks, pool, 4)).toBe('10.0.0.16/28'); // what it would be without them
});

test('a block full of reservations: the next goes to a fresh block; a static pin in it is skipped', () => {
  const reservations: Reservations = {};
  const blocks = { '10.0.0.22/32': { node: 'n2', incarnation: 'u' } }; // a static address pinned there
  const got: string[] = [];
  for (let i = 0; i < 13; i++) {
    const address = stickyCandidate(blocks, reservations, pool, 4) ?? 'none';
    got.push(address);
    reservations[`db/pg/${i}`] = { addresses: [address] };
  }
  expect(got.slice(0, 5)).toEqual(['10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5', '10.0.0.6']);
  expect(got).not.toContain('10.0.0.22');
  // 10.0.0.0/28 holds .2-.14 (13): full. The 14th opens a block nothing covers: not 10.0.0.16/28,
  // where the static address is pinned (the pool hands no block that covers a pin).
  expect(stickyCandidate(blocks, reservations, pool, 4)).toBe('10.0.0.34');
});

test('an idle reservation ends once idle for longer than the pool keeps it', () => {
  const reservations: Reservations = {
    'db/pg/0': { addresses: ['10.0.0.19'] },
    'db/pg/1': { addresses: ['10.0.0.20'], idleSince: 1_000 },
    'db/pg/2': { addresses: ['10.0.0.21'], idleSince: 5_000 },
  };
  expect(nextExpiry(reservations, 10_000)).toBe(11_000);
  expect(expiredReservations(reservations, 10_000, 10_999)).toEqual([]);
  expect(expiredReservations(reservations, 10_000, 11_000)).toEqual(['db/pg/1']);
  expect(expiredReservations(reservations, 10_000, 20_000)).toEqual(['db/pg/1', 'db/pg/2']);
  expect(nextExpiry({ 'db/pg/0': { addresses: [] } }, 10_000)).toBeUndefined();
});

test('a deleted StatefulSet’s idle reservations end; a held one, and those of a same-named set elsewhere, stay', () => {
  const reservations: Reservations = {
    'db/pg/0': { addresses: ['10.0.0.19'], idleSince: 1_000 },
    'db/pg/1': { addresses: ['10.0.0.20'] },
    'db/pg-old/0': { addresses: ['10.0.0.22'], idleSince: 1_000 },
    'other/pg/0': { addresses: ['10.0.0.21'], idleSince: 1_000 },
  };
  expect(reservedStatefulSets(reservations)).toEqual(['db/pg', 'db/pg-old', 'other/pg']);
  expect(idleOfDeleted(reservations, ['db/pg'])).toEqual(['db/pg/0']);
  expect(idleOfDeleted(reservations, ['db/pg', 'other/pg'])).toEqual(['db/pg/0', 'other/pg/0']);
  expect(idleOfDeleted(reservations, [])).toEqual([]);
  expect(reservedStatefulSets(undefined)).toEqual([]);
});
