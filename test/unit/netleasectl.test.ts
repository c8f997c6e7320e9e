// netleasectl's pure parts: argument validation (errors name the argument), table output, ages,
// and the per-block usage nodes/pools print.
import { z } from 'zod';
import { argument, onlyOptions, parseCommandLine, positionals, UsageError } from '../../cli/args';
import { age, table } from '../../cli/output';
import { blockUsage, emptyTable } from '../../domain/allocation';
import { PoolSpecSchema } from '../../domain/config';

test('the command line: options anywhere, unknown options and values are usage errors', () => {
  const line = parseCommandLine(['leases', '--node', 'n1', '-o', 'json', '--all']);
  expect(line).toEqual({
    command: 'leases',
    positionals: [],
    values: { node: 'n1', output: 'json', all: true },
  });
  expect(() => parseCommandLine(['leases', '--bogus'])).toThrow(UsageError);
  expect(() => onlyOptions(parseCommandLine(['nodes', '--reason', 'x']), [])).toThrow(
    '--reason: not an option of "nodes"',
  );
  expect(() => positionals(parseCommandLine(['lease']), ['<lease>'])).toThrow('<lease>: missing');
  expect(() => positionals(parseCommandLine(['lease', 'a', 'b']), ['<lease>'])).toThrow(
    'unexpected argument "b"',
  );
  expect(() => argument(z.enum(['a', 'b']), 'c', '--phase')).toThrow(/^--phase: .*\(got "c"\)$/);
  expect(argument(z.string().default('x'), undefined, '--o')).toBe('x');
});

test('tables pad their columns, print "-" for empty cells and "(none)" for no rows', () => {
  expect(
    table(
      ['A', 'LONG'],
      [
        ['xyz', 1],
        ['', undefined],
      ],
    ),
  ).toBe('A    LONG\nxyz  1\n-    -\n');
  expect(table(['A', 'B'], [])).toBe('A  B\n(none)\n');
});

test('ages', () => {
  const now = Date.parse('2026-01-02T00:00:00Z');
  expect(age(new Date(now - 5_000), now)).toBe('5s');
  expect(age(new Date(now - 125_000), now)).toBe('2m5s');
  expect(age(new Date(now - 3_725_000), now)).toBe('1h2m');
  expect(age(new Date(now - 90_000_000), now)).toBe('1d1h');
});

test('block usage: capacity without the gateway and exclusions; cooling only until it expires', () => {
  const pool = PoolSpecSchema.parse({
    name: 'p',
    cidrs: ['10.0.0.0/24'],
    exclude: ['10.0.0.10/31', '10.0.0.1'],
  });
  const t = emptyTable();
  t.blocks.push({ cidr: '10.0.0.0/26', family: 4, incarnation: 'u1' });
  t.allocations['10.0.0.2'] = {
    address: '10.0.0.2',
    family: 4,
    block: '10.0.0.0/26',
    owner: 'lease/x/eth0',
    podUid: 'x',
    incarnation: 'u1',
  };
  t.cooldowns['10.0.0.3'] = 2000;
  t.cooldowns['10.0.0.4'] = 500;
  // 62 usable, minus the gateway .1 (also excluded: counted once), minus .10 and .11.
  expect(blockUsage(t, pool, 1000)).toEqual([
    { block: '10.0.0.0/26', incarnation: 'u1', family: 4, capacity: 59, used: 1, cooling: 1, free: 57 },
  ]);
});
