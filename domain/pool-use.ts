// A pool's use per family, one computation for `netleasectl pools` and the NetleasePool status:
// its capacity (every block its CIDRs hold), and over the blocks handed to nodes the addresses
// allocated, cooling down, and free on their node (reserved: no other node gets them); of the
// allocated, those whose lease workflow closed without returning them (leaked).
import { blockCapacity, poolFamilies, toCount, type BlockUsage } from './allocation';
import { exclusionRanges } from './pool-spec';
import { blockCount, parsePrefix, size, subPrefix, type Family, type Prefix } from './cidr';
import { blockLength } from './blocks';
import type { PoolSpec } from './config';

export interface FamilyUse {
  family: Family;
  /** Addresses the pool can hand out: every block of its CIDRs, less gateways and exclusions. */
  capacity: number;
  /** Held by a lease (leaked ones included). */
  allocated: number;
  /** Free in blocks handed to nodes: set aside for those nodes. */
  reserved: number;
  /** Returned, cooling down before they are handed out again. */
  cooldown: number;
  /** Of the allocated: held for a lease workflow that is closed (the reconciler collects them). */
  leaked: number;
}

/** Inclusive ranges merged where they overlap or touch, in order. */
function merged(ranges: Array<[bigint, bigint]>): Array<[bigint, bigint]> {
  const sorted = [...ranges].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const out: Array<[bigint, bigint]> = [];
  for (const [lo, hi] of sorted) {
    const last = out[out.length - 1];
    if (last && lo <= last[1] + 1n) last[1] = hi > last[1] ? hi : last[1];
    else out.push([lo, hi]);
  }
  return out;
}

/**
 * The blocks of one CIDR summed without visiting each (an IPv6 /64 holds 2^56 of /120): every
 * block has the same capacity but those an exclusion touches. A block strictly inside an exclusion
 * has none; the (at most two) blocks at an exclusion's ends are counted one by one.
 */
function cidrCapacity(pool: PoolSpec, cidr: Prefix): bigint {
  const length = blockLength(pool, cidr.family);
  const count = blockCount(cidr, length);
  if (count === 0n) return 0n;
  const span = size(subPrefix(cidr, length, 0n));
  const plain = blockCapacity({ ...pool, exclude: [] }, subPrefix(cidr, length, 0n));
  const end = cidr.network + size(cidr) - 1n;
  const edges = new Set<bigint>();
  let covered = 0n;
  for (const [lo, hi] of merged(exclusionRanges(pool, cidr.family))) {
    if (hi < cidr.network || lo > end) continue;
    const first = ((lo > cidr.network ? lo : cidr.network) - cidr.network) / span;
    const last = ((hi < end ? hi : end) - cidr.network) / span;
    edges.add(first).add(last);
    if (last - first > 1n) covered += last - first - 1n;
  }
  let total = plain * (count - BigInt(edges.size) - covered);
  for (const index of edges) total += blockCapacity(pool, subPrefix(cidr, length, index));
  return total;
}

export function poolCapacity(pool: PoolSpec, family: Family): bigint {
  return pool.cidrs
    .map((text) => parsePrefix(text))
    .filter((cidr) => cidr.family === family)
    .reduce((total, cidr) => total + cidrCapacity(pool, cidr), 0n);
}

/**
 * The pool's use per family from the usage of its blocks on every node (blockUsage of the node
 * tables) and the families of its leaked allocations.
 */
export function poolUse(pool: PoolSpec, blocks: BlockUsage[], leaked: Family[]): FamilyUse[] {
  return poolFamilies(pool).map((family) => {
    const mine = blocks.filter((b) => b.family === family);
    const sum = (key: 'used' | 'free' | 'cooling') => mine.reduce((n, b) => n + b[key], 0);
    return {
      family,
      capacity: toCount(poolCapacity(pool, family)),
      allocated: sum('used'),
      reserved: sum('free'),
      cooldown: sum('cooling'),
      leaked: leaked.filter((f) => f === family).length,
    };
  });
}

/** The share of the capacity no new pod can get now: allocated or cooling down (all of none). */
export function inUse(use: FamilyUse): number {
  return use.capacity === 0 ? 1 : (use.allocated + use.cooldown) / use.capacity;
}
