// A pool's block table: which block of the pool's CIDRs belongs to which node incarnation. Blocks
// are compared by the addresses they cover, never by their text: a pool whose block size changed
// (a /26 held, a /25 asked for) must not hand out a block that overlaps one held.
import {
  blockCount,
  formatPrefix,
  lastAddress,
  overlaps,
  parsePrefix,
  size,
  subPrefix,
  type Family,
  type Prefix,
} from './cidr';
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

/** The held block (as text) that covers any address of `prefix`, if one does. */
export function overlappingBlock(held: Iterable<string>, prefix: Prefix): string | undefined {
  for (const text of held) if (overlaps(parsePrefix(text), prefix)) return text;
  return undefined;
}

/**
 * The first block of `family` that overlaps no held block, or undefined when the pool is
 * exhausted. Each candidate that overlaps a held block skips past that block's last address, so
 * the scan costs at most (held blocks + 1) candidates per CIDR, whatever the range's size.
 */
export function freeBlock(table: BlockTable, pool: PoolSpec, family: Family): string | undefined {
  const length = blockLength(pool, family);
  const held = Object.keys(table)
    .map((text) => parsePrefix(text))
    .filter((p) => p.family === family);
  for (const text of pool.cidrs) {
    const cidr = parsePrefix(text);
    if (cidr.family !== family) continue;
    const count = blockCount(cidr, length);
    if (count === 0n) continue;
    const span = size(subPrefix(cidr, length, 0n));
    for (let index = 0n; index < count;) {
      const candidate = subPrefix(cidr, length, index);
      const taken = held.find((h) => overlaps(h, candidate));
      if (!taken) return formatPrefix(candidate);
      // On to the first candidate that starts after the held block ends.
      index = (lastAddress(taken) - cidr.network) / span + 1n;
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
