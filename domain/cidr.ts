// IPv4/IPv6 address and prefix math on bigints. Pure and deterministic: used by workflows.

export type Family = 4 | 6;

export interface Prefix {
  family: Family;
  /** Network address (host bits zero). */
  network: bigint;
  length: number;
}

const bits = (family: Family): number => (family === 4 ? 32 : 128);

export class CidrError extends Error {}

export function parseIPv4(text: string): bigint {
  const parts = text.split('.');
  if (parts.length !== 4) throw new CidrError(`invalid IPv4 address "${text}"`);
  let value = 0n;
  for (const part of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part) || Number(part) > 255) {
      throw new CidrError(`invalid IPv4 address "${text}"`);
    }
    value = (value << 8n) | BigInt(part);
  }
  return value;
}

export function parseIPv6(text: string): bigint {
  const invalid = () => new CidrError(`invalid IPv6 address "${text}"`);
  if (!/^[0-9a-fA-F:.]+$/.test(text)) throw invalid();
  let groups: string[];
  const halves = text.split('::');
  if (halves.length > 2) throw invalid();
  const split = (s: string) => (s === '' ? [] : s.split(':'));
  const head = split(halves[0] ?? '');
  const tail = halves.length === 2 ? split(halves[1] ?? '') : [];
  const expandV4 = (list: string[]): string[] => {
    const last = list[list.length - 1];
    if (last === undefined || !last.includes('.')) return list;
    const v4 = parseIPv4(last);
    return [...list.slice(0, -1), (v4 >> 16n).toString(16), (v4 & 0xffffn).toString(16)];
  };
  const headX = halves.length === 2 ? head : expandV4(head);
  const tailX = expandV4(tail);
  if (halves.length === 2) {
    const missing = 8 - headX.length - tailX.length;
    if (missing < 1) throw invalid();
    groups = [...headX, ...Array<string>(missing).fill('0'), ...tailX];
  } else {
    groups = headX;
  }
  if (groups.length !== 8) throw invalid();
  let value = 0n;
  for (const group of groups) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(group)) throw invalid();
    value = (value << 16n) | BigInt(`0x${group}`);
  }
  return value;
}

export function parseAddress(text: string): { family: Family; value: bigint } {
  return text.includes(':') ? { family: 6, value: parseIPv6(text) } : { family: 4, value: parseIPv4(text) };
}

export function formatAddress(family: Family, value: bigint): string {
  if (family === 4) {
    return [24n, 16n, 8n, 0n].map((shift) => ((value >> shift) & 0xffn).toString()).join('.');
  }
  const groups = Array.from({ length: 8 }, (_, i) => (value >> BigInt((7 - i) * 16)) & 0xffffn);
  // RFC 5952: compress the longest run (length >= 2) of zero groups, the first one on a tie.
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0n) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0n) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

/** Parses "a.b.c.d/n" or "x::y/n"; host bits must be zero unless `allowHostBits`. */
export function parsePrefix(text: string, allowHostBits = false): Prefix {
  const slash = text.indexOf('/');
  if (slash < 0) throw new CidrError(`invalid CIDR "${text}": missing "/length"`);
  const { family, value } = parseAddress(text.slice(0, slash));
  const lengthText = text.slice(slash + 1);
  const length = Number(lengthText);
  if (!/^[0-9]{1,3}$/.test(lengthText) || length > bits(family)) {
    throw new CidrError(`invalid CIDR "${text}": prefix length must be 0..${bits(family)}`);
  }
  const network = value & netmask(family, length);
  if (!allowHostBits && network !== value) {
    throw new CidrError(
      `invalid CIDR "${text}": host bits set (did you mean ${formatPrefix({ family, network, length })}?)`,
    );
  }
  return { family, network, length };
}

export function formatPrefix(prefix: Prefix): string {
  return `${formatAddress(prefix.family, prefix.network)}/${prefix.length}`;
}

export function netmask(family: Family, length: number): bigint {
  const total = bits(family);
  return ((1n << BigInt(total)) - 1n) ^ ((1n << BigInt(total - length)) - 1n);
}

export function size(prefix: Prefix): bigint {
  return 1n << BigInt(bits(prefix.family) - prefix.length);
}

export function lastAddress(prefix: Prefix): bigint {
  return prefix.network + size(prefix) - 1n;
}

export function contains(prefix: Prefix, family: Family, value: bigint): boolean {
  return prefix.family === family && value >= prefix.network && value <= lastAddress(prefix);
}

export function overlaps(a: Prefix, b: Prefix): boolean {
  return a.family === b.family && a.network <= lastAddress(b) && b.network <= lastAddress(a);
}

/**
 * Host addresses that may be given to an interface. IPv4 drops network and broadcast except on
 * /31 and /32 (RFC 3021); IPv6 drops the subnet-router anycast address except on /127 and /128.
 */
export function usableRange(prefix: Prefix): { first: bigint; last: bigint } {
  const hostBits = bits(prefix.family) - prefix.length;
  if (hostBits <= 1) return { first: prefix.network, last: lastAddress(prefix) };
  const last = prefix.family === 4 ? lastAddress(prefix) - 1n : lastAddress(prefix);
  return { first: prefix.network + 1n, last };
}

/** The `index`-th sub-prefix of length `length` inside `prefix`. */
export function subPrefix(prefix: Prefix, length: number, index: bigint): Prefix {
  if (length < prefix.length || length > bits(prefix.family)) {
    throw new CidrError(`block length /${length} does not fit in ${formatPrefix(prefix)}`);
  }
  const count = 1n << BigInt(length - prefix.length);
  if (index < 0n || index >= count) throw new CidrError(`block index ${index} out of range`);
  const network = prefix.network + index * (1n << BigInt(bits(prefix.family) - length));
  return { family: prefix.family, network, length };
}

export function blockCount(prefix: Prefix, length: number): bigint {
  return length < prefix.length ? 0n : 1n << BigInt(length - prefix.length);
}
