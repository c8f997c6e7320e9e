// A pool's block table: which block of the pool's CIDRs belongs to which node incarnation.
import { blockCount, formatPrefix, parsePrefix, subPrefix, type Family } from './cidr';
import type { PoolSpec } from './config';

export interface BlockOwner {
  node: string;
  incarnation: string;
}

/** block CIDR → owner. */
export type BlockTable = Record<string, BlockOwner>;

export function blockLength(pool: PoolSpec, family: Family): number {
  return family === 4 ? pool.blockSize.ipv4 : pool.blockSize.ipv6;
}

/**
 * The first block of `family` that nobody holds, or undefined when the pool is exhausted.
 * Scans at most (held blocks + 1) candidates per CIDR, so huge IPv6 ranges cost nothing extra.
 */
export function freeBlock(table: BlockTable, pool: PoolSpec, family: Family): string | undefined {
  const held = Object.keys(table).length;
  for (const text of pool.cidrs) {
    const cidr = parsePrefix(text);
    if (cidr.family !== family) continue;
    const count = blockCount(cidr, blockLength(pool, family));
    const limit = count < BigInt(held + 1) ? count : BigInt(held + 1);
    for (let index = 0n; index < limit; index++) {
      const block = formatPrefix(subPrefix(cidr, blockLength(pool, family), index));
      if (!table[block]) return block;
    }
  }
  return undefined;
}

export function blocksOf(table: BlockTable, node: string, incarnation?: string): string[] {
  return Object.entries(table)
    .filter(
      ([, owner]) => owner.node === node && (incarnation === undefined || owner.incarnation === incarnation),
    )
    .map(([block]) => block);
}
