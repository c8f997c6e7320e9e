// Static addresses (issue 29 item 2): a pod annotation names the address of each family its
// interface gets. The address must be one the pool could hand out (inside a CIDR, usable in its
// block, not the block's gateway, not excluded); the ADD checks it before a lease starts, and the
// node and pool workflows again before they hand it. Outside a block the node holds, the address
// comes to the node as a one-address block of its own, pinned (`a/32`, `a/128`): the pool's table
// holds it like any block, so no node block that covers it is handed out meanwhile, and the
// address follows its pod to any node once it has gone back to the pool.
import {
  contains,
  formatAddress,
  formatPrefix,
  parseAddress,
  parsePrefix,
  subPrefix,
  usableRange,
  type Family,
  type Prefix,
} from './cidr';
import { exclusionRanges, type PoolSpec } from './pool-spec';

/** The pod annotation naming its addresses, one per family, comma-separated. */
export const STATIC_ADDRESSES_ANNOTATION = 'netlease.io/ip-addresses';

const hostLength = (family: Family): number => (family === 4 ? 32 : 128);
const blockLengthOf = (pool: PoolSpec, family: Family): number =>
  family === 4 ? pool.blockSize.ipv4 : pool.blockSize.ipv6;

/**
 * The annotation's addresses in canonical form, IPv4 first, or why it is not a list of at most
 * one address per family.
 */
export function parseStaticAddresses(text: string): string[] | { problem: string } {
  const parts = text.split(',').map((p) => p.trim());
  const parsed: Array<{ family: Family; value: bigint }> = [];
  for (const part of parts) {
    try {
      if (part.includes('/')) throw new Error('a prefix');
      parsed.push(parseAddress(part));
    } catch {
      return { problem: `${JSON.stringify(part)} is not an IP address (one per family, comma-separated)` };
    }
  }
  for (const family of [4, 6] as const)
    if (parsed.filter((a) => a.family === family).length > 1)
      return { problem: `names more than one IPv${family} address (one per family)` };
  return parsed.sort((a, b) => a.family - b.family).map((a) => formatAddress(a.family, a.value));
}

/** The pool block of its configured size that covers the address. */
export function naturalBlock(pool: PoolSpec, family: Family, value: bigint): Prefix | undefined {
  const cidr = pool.cidrs.map((c) => parsePrefix(c)).find((c) => contains(c, family, value));
  if (!cidr) return undefined;
  const length = blockLengthOf(pool, family);
  const span = 1n << BigInt(hostLength(family) - length);
  return subPrefix(cidr, length, (value - cidr.network) / span);
}

/** Why the pool cannot hand out this address; undefined: it can. */
export function staticAddressProblem(pool: PoolSpec, address: string): string | undefined {
  const { family, value } = parseAddress(address);
  const block = naturalBlock(pool, family, value);
  if (!block) return `${address} is outside pool ${pool.name} (${pool.cidrs.join(', ')})`;
  const { first, last } = usableRange(block);
  if (value < first || value > last)
    return `${address} is not a usable address of its block ${formatPrefix(block)} in pool ${pool.name} (its network or broadcast address)`;
  if (pool.gateway === 'first' && value === first)
    return `${address} is the gateway of its block ${formatPrefix(block)} in pool ${pool.name}`;
  const excluded = exclusionRanges(pool, family).find(([lo, hi]) => value >= lo && value <= hi);
  if (excluded) {
    const [lo, hi] = excluded.map((v) => formatAddress(family, v));
    return `${address} is excluded from pool ${pool.name} (${lo === hi ? lo : `${lo}-${hi}`})`;
  }
  return undefined;
}

/** The one-address block that brings a static address to a node that holds no block covering it. */
export function pinnedBlockOf(address: string): string {
  const { family } = parseAddress(address);
  return `${address}/${hostLength(family)}`;
}

/** Whether a block is a static address's pinned block (one address, smaller than the pool's blocks). */
export function isPinnedBlock(pool: PoolSpec, cidr: string | Prefix): boolean {
  const prefix = typeof cidr === 'string' ? parsePrefix(cidr) : cidr;
  return prefix.length === hostLength(prefix.family) && blockLengthOf(pool, prefix.family) < prefix.length;
}

/** The block a grant describes (prefix length, gateway): a pinned address's natural block. */
export function grantBlock(pool: PoolSpec, cidr: string): Prefix {
  const prefix = parsePrefix(cidr);
  if (!isPinnedBlock(pool, cidr)) return prefix;
  return naturalBlock(pool, prefix.family, prefix.network) ?? prefix;
}
