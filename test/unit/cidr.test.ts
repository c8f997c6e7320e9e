import {
  blockCount,
  contains,
  formatAddress,
  formatPrefix,
  parseAddress,
  parseIPv6,
  parsePrefix,
  subPrefix,
  usableRange,
} from '../../domain/cidr';

const usable = (cidr: string) => {
  const prefix = parsePrefix(cidr);
  const { first, last } = usableRange(prefix);
  return [formatAddress(prefix.family, first), formatAddress(prefix.family, last)];
};

describe('IPv4', () => {
  test.each([
    ['198.18.0.0/24', ['198.18.0.1', '198.18.0.254']], // network and broadcast excluded
    ['198.18.0.4/30', ['198.18.0.5', '198.18.0.6']],
    ['198.18.0.4/31', ['198.18.0.4', '198.18.0.5']], // RFC 3021: both usable
    ['198.18.0.7/32', ['198.18.0.7', '198.18.0.7']],
    ['0.0.0.0/0', ['0.0.0.1', '255.255.255.254']],
  ])('usable range of %s', (cidr, expected) => expect(usable(cidr)).toEqual(expected));

  test('rejects malformed addresses and prefixes', () => {
    for (const bad of [
      '198.18.0.256/24',
      '198.18.0/24',
      '198.18.0.01/24',
      '198.18.0.0/33',
      '198.18.0.0',
      '198.18.0.0/-1',
    ]) {
      expect(() => parsePrefix(bad)).toThrow(/invalid/);
    }
  });

  test('rejects host bits unless allowed', () => {
    expect(() => parsePrefix('198.18.0.1/24')).toThrow(/host bits set \(did you mean 198\.18\.0\.0\/24\?\)/);
    expect(formatPrefix(parsePrefix('198.18.0.1/24', true))).toBe('198.18.0.0/24');
  });

  test('blocks and containment', () => {
    const pool = parsePrefix('198.18.0.0/15');
    expect(blockCount(pool, 26)).toBe(2048n);
    expect(formatPrefix(subPrefix(pool, 26, 0n))).toBe('198.18.0.0/26');
    expect(formatPrefix(subPrefix(pool, 26, 2047n))).toBe('198.19.255.192/26');
    expect(() => subPrefix(pool, 26, 2048n)).toThrow(/out of range/);
    expect(() => subPrefix(pool, 14, 0n)).toThrow(/does not fit/);
    expect(contains(pool, 4, parseAddress('198.19.255.255').value)).toBe(true);
    expect(contains(pool, 4, parseAddress('198.20.0.0').value)).toBe(false);
  });
});

describe('IPv6', () => {
  test.each([
    ['fd00::/64', ['fd00::1', 'fd00::ffff:ffff:ffff:ffff']], // subnet-router anycast excluded, no broadcast
    ['fd00::/126', ['fd00::1', 'fd00::3']],
    ['fd00::2/127', ['fd00::2', 'fd00::3']], // RFC 6164: both usable
    ['fd00::9/128', ['fd00::9', 'fd00::9']],
  ])('usable range of %s', (cidr, expected) => expect(usable(cidr)).toEqual(expected));

  test('parses and formats per RFC 5952', () => {
    expect(formatAddress(6, parseIPv6('FD00:0:0:0:0:0:0:1'))).toBe('fd00::1');
    expect(formatAddress(6, parseIPv6('2001:db8:0:0:1:0:0:1'))).toBe('2001:db8::1:0:0:1');
    expect(formatAddress(6, parseIPv6('::'))).toBe('::');
    expect(formatAddress(6, parseIPv6('::ffff:198.18.0.1'))).toBe('::ffff:c612:1');
    expect(formatAddress(6, parseIPv6('fd00:1:2:3:4:5:6:7'))).toBe('fd00:1:2:3:4:5:6:7');
    expect(formatAddress(6, parseIPv6('fd00:0:1:0:0:1:0:0'))).toBe('fd00:0:1::1:0:0');
  });

  test('rejects malformed addresses', () => {
    for (const bad of [
      'fd00:::1',
      'fd00::1::2',
      'fd00:12345::1',
      '1:2:3:4:5:6:7:8:9',
      'fd00::g',
      'fd00::/129',
    ]) {
      expect(() => (bad.includes('/') ? parsePrefix(bad) : parseIPv6(bad))).toThrow(/invalid/);
    }
  });

  test('huge ranges split into blocks without enumerating them', () => {
    const pool = parsePrefix('fd00::/8');
    expect(blockCount(pool, 120)).toBe(1n << 112n);
    expect(formatPrefix(subPrefix(pool, 120, (1n << 112n) - 1n))).toBe(
      'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ff00/120',
    );
  });
});
