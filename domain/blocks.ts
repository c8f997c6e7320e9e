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

/** Parsed block texts: a table is parsed on every hand-out, and its blocks are few and reused. */
const parsed = new Map<string, Prefix>();
const PARSED_KEPT = 100_000;

function parsedPrefix(text: string): Prefix {
  let prefix = parsed.get(text);
  if (!prefix) {
    if (parsed.size >= PARSED_KEPT) parsed.clear();
    parsed.set(text, (prefix = parsePrefix(text)));
  }
  return prefix;
}

/** The held blocks of `family`, lowest first. */
function heldInOrder(table: BlockTable, family: Family): Prefix[] {
  return Object.keys(table)
    .map(parsedPrefix)
    .filter((p) => p.family === family)
    .sort((a, b) => (a.network < b.network ? -1 : a.network > b.network ? 1 : 0));
}

/**
 * The first block of `family` that overlaps no held block, or undefined when the pool is
 * exhausted: the lowest free candidate of the first CIDR that has one. One pass over the held
 * blocks in address order, each overlapping one moving the candidate past its last address
 * (before: every candidate searched the whole table, cubic in the blocks handed out: 2,000
 * hand-outs cost 34 s of CPU, and a pool workflow task at 1,000 nodes 93 s).
 */
export function freeBlock(table: BlockTable, pool: PoolSpec, family: Family): string | undefined {
  const length = blockLength(pool, family);
  const held = heldInOrder(table, family);
  for (const text of pool.cidrs) {
    const cidr = parsePrefix(text);
    if (cidr.family !== family) continue;
    const free = firstFree(cidr, length, held);
    if (free) return formatPrefix(free);
  }
  return undefined;
}

/** The lowest block of `length` in `cidr` that overlaps none of `held` (in address order). */
function firstFree(cidr: Prefix, length: number, held: Prefix[]): Prefix | undefined {
  const count = blockCount(cidr, length);
  if (count === 0n) return undefined;
  const span = size(subPrefix(cidr, length, 0n));
  let index = 0n;
  for (const block of held) {
    const candidate = subPrefix(cidr, length, index);
    if (lastAddress(block) < candidate.network) continue;
    if (block.network > lastAddress(candidate)) return candidate;
    index = (lastAddress(block) - cidr.network) / span + 1n;
    if (index >= count) return undefined;
  }
  return subPrefix(cidr, length, index);
}

/**
 * The named blocks of the node's incarnation, and the named ones recorded for the node before its
 * incarnation was known (''): a node run that rebuilt its table before it observed its Node cut
 * those, and relabelled its own copy on observing (workflows/node/incarnations), not the pool's.
 */
export function namedBlocksOf(
  table: BlockTable,
  node: string,
  incarnation: string,
  named: string[],
): string[] {
  return named.filter((block) => {
    const owner = table[block];
    return owner?.node === node && (owner.incarnation === incarnation || owner.incarnation === '');
  });
}

export function blocksOf(table: BlockTable, node: string, incarnation?: string): string[] {
  return Object.entries(table)
    .filter(
      ([, owner]) => owner.node === node && (incarnation === undefined || owner.incarnation === incarnation),
    )
    .map(([block]) => block);
}
