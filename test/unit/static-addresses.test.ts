// Static addresses (domain/static-addresses, domain/allocation): the annotation's parse, what a
// pool can hand out, and a node's table giving the address from its own block, asking for the
// pinned block, or saying who holds it. The pinned block is told as the pool block around it and
// is never handed to another pod.
import {
  allocate,
  blockUsage,
  emptyTable,
  grantOf,
  release,
  type AllocationTable,
} from '../../domain/allocation';
import { PoolSpecSchema } from '../../domain/config';
import {
  grantBlock,
  isPinnedBlock,
  parseStaticAddresses,
  pinnedBlockOf,
  staticAddressProblem,
} from '../../domain/static-addresses';
import { formatPrefix } from '../../domain/cidr';

const pool = PoolSpecSchema.parse({
  name: 'p',
  cidrs: ['198.18.0.0/24', 'fd00::/120'],
  blockSize: { ipv4: 29, ipv6: 125 },
  exclude: ['198.18.0.2', 'fd00::4/126'],
});
const req = (owner: string, incarnation = 'u1') => ({ owner, podUid: `uid-${owner}`, incarnation });

test.each([
  ['198.18.0.20', ['198.18.0.20']],
  [' fd00::0:9 , 198.18.0.20', ['198.18.0.20', 'fd00::9']],
  ['198.18.0.20,198.18.0.21', { problem: 'names more than one IPv4 address (one per family)' }],
  ['198.18.0.0/24', { problem: '"198.18.0.0/24" is not an IP address (one per family, comma-separated)' }],
  ['', { problem: '"" is not an IP address (one per family, comma-separated)' }],
  ['web', { problem: '"web" is not an IP address (one per family, comma-separated)' }],
])('the annotation %j parses to %j', (text, parsed) => {
  expect(parseStaticAddresses(text)).toEqual(parsed);
});

test.each([
  ['198.18.0.20', undefined],
  ['fd00::a', undefined],
  ['198.18.1.5', '198.18.1.5 is outside pool p (198.18.0.0/24, fd00::/120)'],
  ['198.18.0.17', '198.18.0.17 is the gateway of its block 198.18.0.16/29 in pool p'],
  ['198.18.0.16', expect.stringContaining('not a usable address of its block 198.18.0.16/29')],
  ['198.18.0.23', expect.stringContaining('not a usable address of its block 198.18.0.16/29')],
  ['198.18.0.2', '198.18.0.2 is excluded from pool p (198.18.0.2)'],
  ['fd00::5', 'fd00::5 is excluded from pool p (fd00::4-fd00::7)'],
  ['fd00::9', 'fd00::9 is the gateway of its block fd00::8/125 in pool p'],
])('what pool p says of %s', (address, problem) => {
  expect(staticAddressProblem(pool, address)).toEqual(problem);
});

test('a pinned block is one address smaller than the pool blocks; its grant is the pool block around it', () => {
  expect(pinnedBlockOf('198.18.0.20')).toBe('198.18.0.20/32');
  expect(pinnedBlockOf('fd00::9')).toBe('fd00::9/128');
  expect(isPinnedBlock(pool, '198.18.0.20/32')).toBe(true);
  expect(isPinnedBlock(pool, '198.18.0.16/29')).toBe(false);
  const hostBlocks = PoolSpecSchema.parse({ name: 'h', cidrs: ['10.0.0.0/24'], blockSize: { ipv4: 32 } });
  expect(isPinnedBlock(hostBlocks, '10.0.0.5/32')).toBe(false); // every block is one address there
  expect(formatPrefix(grantBlock(pool, '198.18.0.20/32'))).toBe('198.18.0.16/29');
  expect(formatPrefix(grantBlock(pool, '198.18.0.16/29'))).toBe('198.18.0.16/29');
});

function table(): AllocationTable {
  const t = emptyTable();
  t.blocks.push(
    { cidr: '198.18.0.0/29', family: 4, incarnation: 'u1' },
    { cidr: 'fd00::/125', family: 6, incarnation: 'u1' },
  );
  return t;
}

test('an address in a block the node holds is given from it; the others of the family come as ever', () => {
  const t = table();
  const outcome = allocate(t, pool, req('a'), ['198.18.0.5']);
  expect(outcome).toMatchObject({
    kind: 'granted',
    allocations: [{ address: '198.18.0.5', block: '198.18.0.0/29' }, { address: 'fd00::2' }],
  });
  // The next dynamic allocation skips it.
  expect(allocate(t, pool, req('b'))).toMatchObject({ allocations: [{ address: '198.18.0.3' }, {}] });
});

test('an address no block of the node covers: its pinned block is needed, then it is told as in its pool block', () => {
  const t = table();
  expect(allocate(t, pool, req('a'), ['198.18.0.20'])).toEqual({
    kind: 'needPinned',
    family: 4,
    block: '198.18.0.20/32',
  });
  t.blocks.push({ cidr: '198.18.0.20/32', family: 4, incarnation: 'u1' });
  const outcome = allocate(t, pool, req('a'), ['198.18.0.20']);
  if (outcome.kind !== 'granted') throw new Error(outcome.kind);
  const [v4] = outcome.allocations;
  expect(v4).toMatchObject({ address: '198.18.0.20', block: '198.18.0.20/32' });
  expect(grantOf(pool, v4 as NonNullable<typeof v4>)).toEqual({
    family: 4,
    address: '198.18.0.20',
    prefixLength: 29,
    gateway: '198.18.0.17',
  });
  // Its use as pool status and metrics count it: one address, held.
  expect(blockUsage(t, pool, 0).find((b) => b.block === '198.18.0.20/32')).toMatchObject({
    capacity: 1,
    used: 1,
    free: 0,
  });
});

test('a pinned block is never given to a pod that asked for no static address', () => {
  const t = emptyTable();
  t.blocks.push({ cidr: '198.18.0.20/32', family: 4, incarnation: 'u1' });
  // No gateway: nothing else keeps the one address of a /32 from the dynamic allocation.
  const v4only = PoolSpecSchema.parse({ ...pool, cidrs: ['198.18.0.0/24'], gateway: 'none' });
  expect(allocate(t, v4only, req('a'))).toEqual({ kind: 'needBlock', family: 4 });
  expect(allocate(t, v4only, req('b'), ['198.18.0.20'])).toMatchObject({ kind: 'granted' });
  release(t, 'b', 0, 0);
  expect(allocate(t, v4only, req('c'))).toEqual({ kind: 'needBlock', family: 4 });
});

test('held: by another lease (named), cooling down (until when), or in an earlier incarnation’s block', () => {
  const t = table();
  expect(allocate(t, pool, req('a'), ['198.18.0.5'])).toMatchObject({ kind: 'granted' });
  expect(allocate(t, pool, req('b'), ['198.18.0.5'])).toEqual({
    kind: 'held',
    message: '198.18.0.5 is held by lease a (pod UID uid-a)',
  });
  release(t, 'a', Date.UTC(2026, 10, 27), 30_000);
  expect(allocate(t, pool, req('b'), ['198.18.0.5'])).toEqual({
    kind: 'held',
    message: '198.18.0.5 was released and cools down until 2026-11-27T00:00:30.000Z',
  });
  expect(allocate(t, pool, req('c', 'u2'), ['198.18.0.6'])).toEqual({
    kind: 'held',
    message: "198.18.0.6 is in block 198.18.0.0/29 of this node's earlier incarnation u1",
  });
});

test('the same owner asking again keeps what it holds (idempotent)', () => {
  const t = table();
  const first = allocate(t, pool, req('a'), ['198.18.0.5']);
  expect(allocate(t, pool, req('a'), ['198.18.0.5'])).toEqual(first);
});

test('an address the pool cannot hand out is refused by the node too', () => {
  expect(() => allocate(table(), pool, req('a'), ['198.18.0.1'])).toThrow(
    '198.18.0.1 is the gateway of its block 198.18.0.0/29 in pool p',
  );
});
