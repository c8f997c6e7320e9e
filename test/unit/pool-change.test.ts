// A pool's spec may change under handed-out blocks only where no held address moves (issue 25
// item 5), and blocks are compared by the addresses they cover, never by their text.
import { freeBlock } from '../../domain/blocks';
import { PoolSpecSchema } from '../../domain/config';
import { refusedPoolChange } from '../../domain/pool-change';

const pool = (over: Record<string, unknown> = {}) =>
  PoolSpecSchema.parse({ name: 'p', cidrs: ['198.18.0.0/24', 'fd00::/64'], ...over });

test.each([
  ['blockSize', { blockSize: { ipv4: 25 } }, /blockSize\.ipv4 changed from \/26 to \/25/],
  ['gateway', { gateway: 'none' }, /gateway changed/],
  ['a removed CIDR', { cidrs: ['fd00::/64'] }, /cidrs no longer cover block 198\.18\.0\.64\/26/],
  [
    'a narrowed CIDR',
    { cidrs: ['198.18.0.0/26', 'fd00::/64'] },
    /cidrs no longer cover block 198\.18\.0\.64\/26/,
  ],
  ['an exclusion inside a held block', { exclude: ['198.18.0.70'] }, /exclude gained 198\.18\.0\.70/],
])('%s under a held block is refused, naming the field and the way out', (_, change, message) => {
  const refusal = refusedPoolChange(pool(), pool(change), ['198.18.0.64/26']);
  expect(refusal).toMatch(message);
  expect(refusal).toMatch(/a new pool.*drain/);
});

test.each([
  ['an added CIDR', { cidrs: ['198.18.0.0/24', 'fd00::/64', '198.18.9.0/24'] }],
  ['an exclusion outside every held block', { exclude: ['198.18.0.200'] }],
  ['a removed exclusion', {}],
  ['an IPv6 block size with only IPv4 blocks held', { blockSize: { ipv6: 112 } }],
])('%s is applied', (_, change) => {
  const current = pool({ exclude: ['198.18.0.250'] });
  expect(refusedPoolChange(current, pool(change), ['198.18.0.64/26'])).toBeUndefined();
});

test('with nothing handed out any change is applied', () => {
  expect(refusedPoolChange(pool(), pool({ blockSize: { ipv4: 28 }, gateway: 'none' }), [])).toBeUndefined();
});

test('a /25 is never handed out over a held /26, nor a /26 inside a held /25 (seen red: blocks compared by text)', () => {
  const wide = pool({ blockSize: { ipv4: 25 } });
  expect(freeBlock({ '198.18.0.0/26': { node: 'n', incarnation: 'u' } }, wide, 4)).toBe('198.18.0.128/25');
  expect(freeBlock({ '198.18.0.64/26': { node: 'n', incarnation: 'u' } }, wide, 4)).toBe('198.18.0.128/25');
  const narrow = pool();
  expect(freeBlock({ '198.18.0.0/25': { node: 'n', incarnation: 'u' } }, narrow, 4)).toBe('198.18.0.128/26');
  expect(
    freeBlock(
      {
        '198.18.0.0/25': { node: 'n', incarnation: 'u' },
        '198.18.0.192/26': { node: 'n', incarnation: 'u' },
      },
      narrow,
      4,
    ),
  ).toBe('198.18.0.128/26');
  expect(freeBlock({ '198.18.0.0/24': { node: 'n', incarnation: 'u' } }, narrow, 4)).toBeUndefined();
});
