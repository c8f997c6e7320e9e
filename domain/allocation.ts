// A node's allocation table: which address of the node's blocks belongs to which lease.
// Pure functions over plain, serializable state (it is carried across continue-as-new).
import {
  contains,
  formatAddress,
  parseAddress,
  parsePrefix,
  usableRange,
  type Family,
  type Prefix,
} from './cidr';
import type { PoolSpec } from './config';
import { exclusionRanges } from './pool-spec';
import { grantBlock, isPinnedBlock, pinnedBlockOf, staticAddressProblem } from './static-addresses';

export interface Block {
  cidr: string;
  family: Family;
  /** Node incarnation the pool handed the block to. */
  incarnation: string;
}

export interface Allocation {
  address: string;
  family: Family;
  block: string;
  /** Owner lease workflow id. */
  owner: string;
  podUid: string;
  incarnation: string;
}

export interface AllocationTable {
  blocks: Block[];
  /** address → allocation. */
  allocations: Record<string, Allocation>;
  /** address → epoch ms until which it must not be handed out again. */
  cooldowns: Record<string, number>;
}

export interface AddressGrant {
  family: Family;
  address: string;
  prefixLength: number;
  gateway?: string;
}

export const emptyTable = (): AllocationTable => ({ blocks: [], allocations: {}, cooldowns: {} });

export function ownedBy(table: AllocationTable, owner: string): Allocation[] {
  return Object.values(table.allocations).filter((a) => a.owner === owner);
}

export function poolFamilies(pool: PoolSpec): Family[] {
  const families = new Set(pool.cidrs.map((cidr) => parsePrefix(cidr).family));
  return ([4, 6] as const).filter((f) => families.has(f));
}

export function gatewayOf(pool: PoolSpec, block: Prefix): bigint | undefined {
  if (pool.gateway === 'none') return undefined;
  return usableRange(block).first;
}

export function expireCooldowns(table: AllocationTable, now: number): void {
  for (const [address, until] of Object.entries(table.cooldowns)) {
    if (until <= now) delete table.cooldowns[address];
  }
}

/** First address of `block` that is usable, not the gateway, not excluded, not held, not cooling. */
function freeAddressIn(table: AllocationTable, pool: PoolSpec, block: Prefix): bigint | undefined {
  const { first, last } = usableRange(block);
  const gateway = gatewayOf(pool, block);
  const excluded = exclusionRanges(pool, block.family);
  for (let value = first; value <= last; value++) {
    const skip = excluded.find(([lo, hi]) => value >= lo && value <= hi);
    if (skip) {
      value = skip[1];
      continue;
    }
    if (value === gateway) continue;
    const text = formatAddress(block.family, value);
    if (table.allocations[text] || table.cooldowns[text] !== undefined) continue;
    return value;
  }
  return undefined;
}

export function grantOf(pool: PoolSpec, allocation: Allocation): AddressGrant {
  // A static address in a pinned block is told as in the pool's block that covers it.
  const block = grantBlock(pool, allocation.block);
  const gateway = gatewayOf(pool, block);
  return {
    family: allocation.family,
    address: allocation.address,
    prefixLength: block.length,
    ...(gateway === undefined ? {} : { gateway: formatAddress(block.family, gateway) }),
  };
}

export interface AllocationRequest {
  owner: string;
  podUid: string;
  incarnation: string;
}

export type AllocationOutcome =
  | { kind: 'granted'; allocations: Allocation[] }
  /** The node has no free address of this family left: it needs another block first. */
  | { kind: 'needBlock'; family: Family }
  /** A static address no block of the node covers: its pinned block first (domain/static-addresses). */
  | { kind: 'needPinned'; family: Family; block: string }
  /** A static address the node cannot give now, and why (another owner, cooling, an older incarnation's). */
  | { kind: 'held'; message: string };

/**
 * Gives the owner one address per pool family. Idempotent: an owner that already holds an
 * address of a family keeps it. Expired cooldowns must have been dropped by the caller.
 */
export function allocate(
  table: AllocationTable,
  pool: PoolSpec,
  request: AllocationRequest,
  staticAddresses: string[] = [],
): AllocationOutcome {
  const held = ownedBy(table, request.owner);
  for (const family of poolFamilies(pool)) {
    if (held.some((a) => a.family === family)) continue;
    const fixed = staticAddresses.find((a) => parseAddress(a).family === family);
    const picked = fixed
      ? staticPick(table, pool, fixed, request.incarnation)
      : firstFree(table, pool, family, request.incarnation);
    if (!picked) return { kind: 'needBlock', family };
    if ('kind' in picked) return picked;
    const address = formatAddress(family, picked.value);
    const allocation: Allocation = { address, family, block: picked.block.cidr, ...request };
    table.allocations[address] = allocation;
    held.push(allocation);
  }
  return { kind: 'granted', allocations: held.sort((a, b) => a.family - b.family) };
}

/**
 * The block of the node that gives a static address: one of this incarnation's blocks covering it
 * (a pool block or its pinned block), else its pinned block is needed. Held when another owner has
 * it, it is cooling, or a block of an earlier incarnation covers it (its pods may still run).
 */
function staticPick(
  table: AllocationTable,
  pool: PoolSpec,
  address: string,
  incarnation: string,
): { block: Block; value: bigint } | AllocationOutcome {
  const problem = staticAddressProblem(pool, address);
  if (problem) throw new AllocationConflict(problem);
  const holder = table.allocations[address];
  if (holder)
    return {
      kind: 'held',
      message: `${address} is held by lease ${holder.owner} (pod UID ${holder.podUid})`,
    };
  const cooling = table.cooldowns[address]; // expired ones were dropped by the caller
  if (cooling !== undefined)
    return {
      kind: 'held',
      message: `${address} was released and cools down until ${new Date(cooling).toISOString()}`,
    };
  const { family, value } = parseAddress(address);
  const covering = table.blocks.find((b) => contains(parsePrefix(b.cidr), family, value));
  if (!covering) return { kind: 'needPinned', family, block: pinnedBlockOf(address) };
  if (covering.incarnation !== incarnation)
    return {
      kind: 'held',
      message: `${address} is in block ${covering.cidr} of this node's earlier incarnation ${covering.incarnation}`,
    };
  return { block: covering, value };
}

/** The lowest free address of the incarnation's blocks of this family, blocks in the order acquired. */
function firstFree(
  table: AllocationTable,
  pool: PoolSpec,
  family: Family,
  incarnation: string,
): { block: Block; value: bigint } | undefined {
  for (const block of table.blocks) {
    if (block.family !== family || block.incarnation !== incarnation) continue;
    if (isPinnedBlock(pool, block.cidr)) continue; // a static address's, never handed to another pod
    const value = freeAddressIn(table, pool, parsePrefix(block.cidr));
    if (value !== undefined) return { block, value };
  }
  return undefined;
}

/** Free addresses a node keeps in reserve per family: a quarter block, at least 1, at most 64. */
function reserveOf(block: Prefix): bigint {
  const { first, last } = usableRange(block);
  const quarter = (last - first + 1n) / 4n;
  return quarter < 1n ? 1n : quarter > 64n ? 64n : quarter;
}

/**
 * Whether this allocation leaves its family short, so the node should acquire its next block now,
 * before an allocation has to wait for one. Addresses are handed out lowest first, block by block,
 * so an allocation near the end of the newest block of its family leaves only that block's rest.
 */
export function runningLow(table: AllocationTable, pool: PoolSpec, allocation: Allocation): boolean {
  const blocks = table.blocks.filter(
    (b) =>
      b.family === allocation.family &&
      b.incarnation === allocation.incarnation &&
      !isPinnedBlock(pool, b.cidr),
  );
  if (blocks[blocks.length - 1]?.cidr !== allocation.block) return false;
  const block = parsePrefix(allocation.block);
  return usableRange(block).last - parseAddress(allocation.address).value < reserveOf(block);
}

/** Returns the owner's addresses to the node, each cooling down until `now + cooldownMs`. */
export function release(
  table: AllocationTable,
  owner: string,
  now: number,
  cooldownMs: number,
): Allocation[] {
  const released = ownedBy(table, owner);
  for (const allocation of released) {
    delete table.allocations[allocation.address];
    if (cooldownMs > 0) table.cooldowns[allocation.address] = now + cooldownMs;
  }
  return released;
}

/**
 * Loads an allocation recorded elsewhere (a restored or migrated table). An address already held
 * by a different owner is an error, never a silent overwrite (seed 000: Azure CNS).
 */
export function load(table: AllocationTable, allocation: Allocation): void {
  const existing = table.allocations[allocation.address];
  if (existing && existing.owner !== allocation.owner) {
    throw new AllocationConflict(
      `address ${allocation.address} is held by ${existing.owner} (incarnation ${existing.incarnation}); ` +
        `refusing to load it for ${allocation.owner}`,
    );
  }
  const block = table.blocks.find((b) =>
    contains(parsePrefix(b.cidr), allocation.family, parseAddress(allocation.address).value),
  );
  if (!block) throw new AllocationConflict(`address ${allocation.address} is outside the node's blocks`);
  table.allocations[allocation.address] = allocation;
}

export class AllocationConflict extends Error {
  override name = 'AllocationConflict';
}

/** Blocks of an incarnation that hold no allocation and no cooling address. */
export function idleBlocks(table: AllocationTable, incarnation: string): Block[] {
  const busy = new Set([
    ...Object.values(table.allocations).map((a) => a.block),
    ...Object.keys(table.cooldowns).flatMap((address) => {
      const a = parseAddress(address);
      return table.blocks.filter((b) => contains(parsePrefix(b.cidr), a.family, a.value)).map((b) => b.cidr);
    }),
  ]);
  return table.blocks.filter((b) => b.incarnation === incarnation && !busy.has(b.cidr));
}

/** How full one block of a node's table is (operators: the CLI's nodes and pools). */
export interface BlockUsage {
  block: string;
  incarnation: string;
  family: Family;
  /** Addresses the block can hand out: usable, not the gateway, not excluded. */
  capacity: number;
  used: number;
  /** Returned addresses still cooling down at `now`. */
  cooling: number;
  free: number;
}

/** The same per family across a node's blocks of one pool (metrics). */
export interface AddressUsage {
  family: Family;
  total: number;
  used: number;
  cooling: number;
  free: number;
}

/** Addresses of [first, last] inside the union of `ranges`. */
function overlapCount(first: bigint, last: bigint, ranges: Array<[bigint, bigint]>): bigint {
  const clipped = ranges
    .map(([lo, hi]): [bigint, bigint] => [lo > first ? lo : first, hi < last ? hi : last])
    .filter(([lo, hi]) => lo <= hi)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  let count = 0n;
  let end = first - 1n;
  for (const [lo, hi] of clipped) {
    const from = lo > end ? lo : end + 1n;
    if (hi >= from) count += hi - from + 1n;
    if (hi > end) end = hi;
  }
  return count;
}

/** Addresses one block of the pool can hand out: usable, not the gateway, not excluded. */
export function blockCapacity(pool: PoolSpec, prefix: Prefix): bigint {
  if (isPinnedBlock(pool, prefix)) return 1n; // its static address (the gateway is its pool block's)
  const { first, last } = usableRange(prefix);
  const excluded = exclusionRanges(pool, prefix.family);
  const gateway = gatewayOf(pool, prefix);
  if (gateway !== undefined && gateway >= first && gateway <= last) excluded.push([gateway, gateway]);
  return last - first + 1n - overlapCount(first, last, excluded);
}

/** A count as a number; past 2^53 - 1 (an IPv6 pool's capacity), that. */
export const toCount = (n: bigint): number =>
  n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(n);

/**
 * How full each block of a node's table is at `now`, counted the way `allocate` picks: an address
 * is free when it is usable, not the gateway, not excluded, not held and not cooling.
 */
export function blockUsage(table: AllocationTable, pool: PoolSpec, now: number): BlockUsage[] {
  return table.blocks.map((block) => {
    const prefix = parsePrefix(block.cidr);
    const capacity = toCount(blockCapacity(pool, prefix));
    const inBlock = (address: string) => {
      const parsed = parseAddress(address);
      return contains(prefix, parsed.family, parsed.value);
    };
    const used = Object.values(table.allocations).filter((a) => a.block === block.cidr).length;
    const cooling = Object.entries(table.cooldowns).filter(
      ([address, until]) => until > now && inBlock(address),
    ).length;
    const free = Math.max(0, capacity - used - cooling);
    return {
      block: block.cidr,
      incarnation: block.incarnation,
      family: prefix.family,
      capacity,
      used,
      cooling,
      free,
    };
  });
}

/** blockUsage summed per family of the pool. */
export function addressUsage(table: AllocationTable, pool: PoolSpec, now: number): AddressUsage[] {
  const blocks = blockUsage(table, pool, now);
  return poolFamilies(pool).map((family) => {
    const mine = blocks.filter((b) => b.family === family);
    const sum = (key: 'capacity' | 'used' | 'cooling' | 'free') => mine.reduce((n, b) => n + b[key], 0);
    return { family, total: sum('capacity'), used: sum('used'), cooling: sum('cooling'), free: sum('free') };
  });
}
