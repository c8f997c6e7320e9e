import {
  addressUsage,
  allocate,
  emptyTable,
  expireCooldowns,
  idleBlocks,
  load,
  release,
  runningLow,
  type Allocation,
  type AllocationTable,
} from '../../domain/allocation';
import { freeBlock } from '../../domain/blocks';
import { PoolSpecSchema } from '../../domain/config';

const pool = PoolSpecSchema.parse({
  name: 'p',
  cidrs: ['198.18.0.0/24', 'fd00::/120'],
  blockSize: { ipv4: 29, ipv6: 125 },
  exclude: ['198.18.0.2', 'fd00::4/126'],
});

function tableWithBlocks(): AllocationTable {
  const table = emptyTable();
  table.blocks.push(
    { cidr: '198.18.0.0/29', family: 4, incarnation: 'u1' },
    { cidr: 'fd00::/125', family: 6, incarnation: 'u1' },
  );
  return table;
}
const req = (owner: string) => ({ owner, podUid: owner, incarnation: 'u1' });

test('skips network, gateway and exclusions; one address per family', () => {
  const table = tableWithBlocks();
  const outcome = allocate(table, pool, req('a'));
  // .0 network, .1 gateway, .2 excluded → .3; fd00::0 anycast, ::1 gateway → ::2
  expect(outcome).toMatchObject({
    kind: 'granted',
    allocations: [{ address: '198.18.0.3' }, { address: 'fd00::2' }],
  });
});

test('is idempotent per owner and asks for a block when a family runs out', () => {
  const table = tableWithBlocks();
  const first = allocate(table, pool, req('a'));
  expect(allocate(table, pool, req('a'))).toEqual(first);
  // v4 block /29: .3 .4 .5 .6 usable (.7 broadcast); v6 /125: ::2 ::3 (::4-::7 excluded)
  expect(allocate(table, pool, req('b'))).toMatchObject({ kind: 'granted' });
  expect(allocate(table, pool, req('c'))).toEqual({ kind: 'needBlock', family: 6 });
});

test('released addresses cool down before reuse', () => {
  const table = tableWithBlocks();
  allocate(table, pool, req('a'));
  release(table, 'lease-a', 0, 1000); // unknown owner: no-op
  expect(Object.keys(table.allocations)).toHaveLength(2);
  release(table, 'a', 1000, 30000);
  expect(allocate(table, pool, req('b'))).toMatchObject({
    allocations: [{ address: '198.18.0.4' }, { address: 'fd00::3' }],
  });
  expireCooldowns(table, 30999);
  expect(table.cooldowns['198.18.0.3']).toBe(31000);
  expireCooldowns(table, 31000);
  expect(allocate(table, pool, req('c'))).toMatchObject({
    allocations: [{ address: '198.18.0.3' }, { address: 'fd00::2' }],
  });
});

test('running low: an allocation in the last quarter (at most 64) of the newest block of its family', () => {
  const wide = PoolSpecSchema.parse({ name: 'w', cidrs: ['198.18.0.0/16', 'fd00::/48'] });
  const table = emptyTable();
  table.blocks.push(
    { cidr: '198.18.0.0/26', family: 4, incarnation: 'u1' },
    { cidr: 'fd00::/64', family: 6, incarnation: 'u1' },
  );
  const low: boolean[] = [];
  for (let i = 0; i < 61; i++) {
    const outcome = allocate(table, wide, req(`o${i}`));
    if (outcome.kind !== 'granted') throw new Error(`o${i} needs a block`);
    expect(runningLow(table, wide, outcome.allocations[1] as Allocation)).toBe(false); // 64 of 2^64 left
    low.push(runningLow(table, wide, outcome.allocations[0] as Allocation));
  }
  // .2-.62 (.1 the gateway, .63 broadcast): from .48 on fewer than 15 (62 / 4) are left.
  expect(low.indexOf(true)).toBe(46);
  expect(low.slice(46).every(Boolean)).toBe(true);
  table.blocks.push({ cidr: '198.18.0.64/26', family: 4, incarnation: 'u1' });
  expect(runningLow(table, wide, table.allocations['198.18.0.62'] as Allocation)).toBe(false); // one is ahead
});

test('only blocks of the requesting incarnation are used', () => {
  const table = tableWithBlocks();
  expect(allocate(table, pool, { ...req('a'), incarnation: 'u2' })).toEqual({ kind: 'needBlock', family: 4 });
});

test('loading an address held by another owner fails and changes nothing', () => {
  const table = tableWithBlocks();
  allocate(table, pool, req('a'));
  const before = JSON.stringify(table);
  expect(() =>
    load(table, {
      address: '198.18.0.3',
      family: 4,
      block: '198.18.0.0/29',
      owner: 'b',
      podUid: 'b',
      incarnation: 'u1',
    }),
  ).toThrow(/held by a/);
  expect(() =>
    load(table, {
      address: '198.18.1.3',
      family: 4,
      block: '198.18.1.0/29',
      owner: 'b',
      podUid: 'b',
      incarnation: 'u1',
    }),
  ).toThrow(/outside/);
  expect(JSON.stringify(table)).toBe(before);
});

test('idle blocks hold neither allocations nor cooling addresses', () => {
  const table = tableWithBlocks();
  expect(idleBlocks(table, 'u1').map((b) => b.cidr)).toEqual(['198.18.0.0/29', 'fd00::/125']);
  allocate(table, pool, req('a'));
  release(table, 'a', 0, 1000);
  expect(idleBlocks(table, 'u1')).toEqual([]);
});

test('pool blocks are handed out once each until exhausted', () => {
  const small = PoolSpecSchema.parse({ name: 's', cidrs: ['198.18.0.0/30'], blockSize: { ipv4: 31 } });
  const held: Record<string, { node: string; incarnation: string }> = {};
  const first = freeBlock(held, small, 4) as string;
  held[first] = { node: 'n', incarnation: 'u' };
  const second = freeBlock(held, small, 4) as string;
  held[second] = { node: 'n', incarnation: 'u' };
  expect([first, second]).toEqual(['198.18.0.0/31', '198.18.0.2/31']);
  expect(freeBlock(held, small, 4)).toBeUndefined();
  expect(freeBlock(held, small, 6)).toBeUndefined();
});

test('addressUsage counts what allocate could hand out: gateway, exclusions, holders and cooldowns', () => {
  const table = tableWithBlocks();
  // 198.18.0.0/29: .1-.6 usable, .1 the gateway, .2 excluded; fd00::/125: ::1-::7, ::1 gateway, ::4/126 excluded
  expect(addressUsage(table, pool, 0)).toEqual([
    { family: 4, total: 4, used: 0, cooling: 0, free: 4 },
    { family: 6, total: 2, used: 0, cooling: 0, free: 2 },
  ]);
  allocate(table, pool, req('a'));
  allocate(table, pool, req('b'));
  release(table, 'a', 1000, 500);
  expect(addressUsage(table, pool, 1200)).toEqual([
    { family: 4, total: 4, used: 1, cooling: 1, free: 2 },
    { family: 6, total: 2, used: 1, cooling: 1, free: 0 },
  ]);
  expect(addressUsage(table, pool, 1500).map((u) => u.cooling)).toEqual([0, 0]);
});
