// Whether a pool's configuration may change while it has blocks handed out (issue 25 item 5). A
// change that would move an address out from under a lease is refused, naming the field and the
// way out; one that only adds room is applied. Judged by address ranges, never by text.
import { lastAddress, overlaps, parseAddress, parsePrefix, type Prefix } from './cidr';
import type { PoolSpec } from './config';
import { blockLength } from './blocks';

const WAY_OUT =
  'to change it, add a new pool with the new settings and move the pods to it, or drain this pool ' +
  '(release its leases until no block is handed out) and restart';

const exclusionPrefix = (text: string): Prefix => {
  if (text.includes('/')) return parsePrefix(text);
  const { family, value } = parseAddress(text);
  return { family, network: value, length: family === 4 ? 32 : 128 };
};

const inside = (inner: Prefix, outer: Prefix): boolean =>
  inner.family === outer.family && inner.network >= outer.network && lastAddress(inner) <= lastAddress(outer);

/**
 * Why `next` cannot replace `current` while the blocks `held` are handed out; undefined when it
 * can (nothing held, or a change that leaves every held address where it is).
 */
export function refusedPoolChange(current: PoolSpec, next: PoolSpec, held: string[]): string | undefined {
  if (held.length === 0) return undefined;
  const blocks = held.map((b) => parsePrefix(b));
  const refuse = (field: string, what: string) =>
    `pool ${current.name}: ${field} ${what} while ${held.length} block(s) are handed out; ${WAY_OUT}`;
  for (const family of [4, 6] as const) {
    const [was, now] = [blockLength(current, family), blockLength(next, family)];
    if (was !== now && blocks.some((b) => b.family === family))
      return refuse(`blockSize.ipv${family}`, `changed from /${was} to /${now}`);
  }
  if (current.gateway !== next.gateway)
    return refuse('gateway', `changed from "${current.gateway}" to "${next.gateway}"`);
  const cidrs = next.cidrs.map((c) => parsePrefix(c));
  const orphan = blocks.find((b) => !cidrs.some((c) => inside(b, c)));
  if (orphan) return refuse('cidrs', `no longer cover block ${held[blocks.indexOf(orphan)]}`);
  const before = new Set(current.exclude);
  const added = next.exclude.filter((e) => !before.has(e));
  const covering = added.find((e) => blocks.some((b) => overlaps(b, exclusionPrefix(e))));
  if (covering) return refuse('exclude', `gained ${covering}, inside a block handed out`);
  return undefined;
}
