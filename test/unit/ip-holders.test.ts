// Who held an address when: allocations paired with their releases, and the holder at a moment.
import { heldAt, holdingsOf, MomentSchema, podUidOf } from '../../cli/ip-holders';
import type { AddressEvent } from '../../temporal/histories';

const at = (minute: number) => new Date(Date.UTC(2026, 10, 27, 14, minute));
const event = (kind: AddressEvent['kind'], owner: string, minute: number): AddressEvent => ({
  kind,
  address: '198.18.0.4',
  owner,
  at: at(minute),
  runId: 'run',
});
const [a, b] = ['lease/uid-a/eth0', 'lease/uid-b/eth0'];

test('an allocation is paired with the release that ended it; a repeated allocation counts once', () => {
  const holdings = holdingsOf(
    [event('allocate', a, 1), event('allocate', a, 2), event('release', a, 5), event('allocate', b, 6)],
    'n1',
  );
  expect(holdings.map((h) => [h.owner, h.podUid, h.allocated, h.released, h.how])).toEqual([
    [a, 'uid-a', at(1), at(5), 'allocate'],
    [b, 'uid-b', at(6), undefined, 'allocate'],
  ]);
});

test('heldAt: from inclusive, to exclusive; an open holding holds until now; a release without its allocation counts from the start', () => {
  const holdings = holdingsOf(
    [event('release', 'lease/old/eth0', 0), event('allocate', a, 1), event('release', a, 5)],
    'n1',
  );
  expect(heldAt(holdings, at(0)).map((h) => h.owner)).toEqual([]);
  expect(heldAt(holdings, new Date(at(0).getTime() - 1)).map((h) => h.owner)).toEqual(['lease/old/eth0']);
  expect(heldAt(holdings, at(1)).map((h) => h.owner)).toEqual([a]);
  expect(heldAt(holdings, at(5)).map((h) => h.owner)).toEqual([]);
  const open = holdingsOf([event('allocate', b, 6)], 'n1');
  expect(heldAt(open, at(59)).map((h) => h.owner)).toEqual([b]);
});

test('a moment needs its zone; an owner that is no lease has no pod uid', () => {
  expect(MomentSchema.parse('2026-11-27T14:05:00+01:00')).toEqual(new Date(Date.UTC(2026, 10, 27, 13, 5)));
  expect(MomentSchema.safeParse('2026-11-27T14:05:00').success).toBe(false);
  expect(MomentSchema.safeParse('yesterday').success).toBe(false);
  expect(podUidOf('loaded-by-operator')).toBe('');
});
