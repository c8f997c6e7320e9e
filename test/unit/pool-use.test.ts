// A pool's use per family (domain/pool-use): the capacity summed without visiting every block is
// the sum of blockCapacity over every block (checked block by block on pools small enough), and
// the counts are the blocks' usage summed per family.
import { blockCapacity, type BlockUsage } from '../../domain/allocation';
import { parsePrefix, subPrefix, blockCount } from '../../domain/cidr';
import { PoolSpecSchema, type PoolSpec } from '../../domain/config';
import { inUse, poolCapacity, poolUse } from '../../domain/pool-use';

const pool = (spec: Record<string, unknown>): PoolSpec => PoolSpecSchema.parse({ name: 'p', ...spec });

/** Every block visited: what poolCapacity must equal. */
function visited(spec: PoolSpec, family: 4 | 6): bigint {
  let total = 0n;
  for (const text of spec.cidrs) {
    const cidr = parsePrefix(text);
    if (cidr.family !== family) continue;
    const length = family === 4 ? spec.blockSize.ipv4 : spec.blockSize.ipv6;
    for (let i = 0n; i < blockCount(cidr, length); i++)
      total += blockCapacity(spec, subPrefix(cidr, length, i));
  }
  return total;
}

test.each([
  [{ cidrs: ['198.18.0.0/24'] }, 4, 4n * 61n],
  [{ cidrs: ['198.18.0.0/24'], gateway: 'none' }, 4, 4n * 62n],
  [{ cidrs: ['198.18.0.0/24'], exclude: ['198.18.0.0/28'] }, 4, undefined],
  [
    { cidrs: ['198.18.0.0/22'], exclude: ['198.18.0.60/30', '198.18.1.0/24', '198.18.0.62', '198.18.2.5'] },
    4,
    undefined,
  ],
  [{ cidrs: ['198.18.0.0/22', '198.19.0.0/24'], exclude: ['198.18.0.0/16'] }, 4, 4n * 61n],
  [{ cidrs: ['198.18.0.0/24'], blockSize: { ipv4: 32 } }, 4, 0n], // each /32 is its own gateway
  [{ cidrs: ['198.18.0.0/24'], blockSize: { ipv4: 32 }, gateway: 'none' }, 4, 256n],
  [{ cidrs: ['fd00::/112'], exclude: ['fd00::100/120', 'fd00::2'] }, 6, undefined],
])('capacity of %j (IPv%s) is every block’s', (spec, family, exact) => {
  const parsed = pool(spec);
  const f = family as 4 | 6;
  expect(poolCapacity(parsed, f)).toBe(visited(parsed, f));
  if (exact !== undefined) expect(poolCapacity(parsed, f)).toBe(exact);
});

test('an IPv6 /64 of /120 blocks: 2^56 blocks of 254, without visiting them', () => {
  expect(poolCapacity(pool({ cidrs: ['fd00::/64'] }), 6)).toBe(2n ** 56n * 254n);
});

test('the counts are the blocks’ usage summed per family; leaked counted by family', () => {
  const spec = pool({ cidrs: ['198.18.0.0/24', 'fd00::/112'] });
  const usage = (family: 4 | 6, used: number, cooling: number, free: number): BlockUsage => ({
    block: 'b',
    incarnation: 'i',
    family,
    capacity: used + cooling + free,
    used,
    cooling,
    free,
  });
  const use = poolUse(spec, [usage(4, 3, 1, 57), usage(4, 61, 0, 0), usage(6, 2, 0, 252)], [4, 6, 6]);
  expect(use).toEqual([
    { family: 4, capacity: 244, allocated: 64, reserved: 57, cooldown: 1, leaked: 1 },
    { family: 6, capacity: 256 * 254, allocated: 2, reserved: 252, cooldown: 0, leaked: 2 },
  ]);
  expect(inUse(use[0]!)).toBeCloseTo(65 / 244);
  expect(inUse({ ...use[0]!, capacity: 0 })).toBe(1); // nothing to hand out: all in use
});
