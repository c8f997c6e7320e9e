// Hostile values, shared by the environment and network-configuration generators: the edges of
// every rule (empty, one past a length limit, separators, non-ASCII, control characters) and
// values of the wrong type, plus fast-check's random ones.
import fc from 'fast-check';

/** A value and whether it certainly breaks the rule of the place it goes. */
export interface Candidate<T> {
  value: T;
  invalid: boolean;
  what?: string;
}

export const valid = <T>(value: T, what?: string): Candidate<T> => ({ value, invalid: false, what });
export const invalid = <T>(value: T, what?: string): Candidate<T> => ({ value, invalid: true, what });

/** Texts that sit on or across the edges of common rules. */
export const EDGE_TEXTS = [
  '',
  ' ',
  '\t',
  '-',
  '.',
  '..',
  '/',
  ';',
  '=',
  ':',
  '"',
  '\\',
  '%00',
  '\u00a0',
  '\u0085',
  'é',
  '😀',
  '\u202eevil',
  'a\nb',
  'a\u0001b',
  '\ud800',
  'x'.repeat(16),
  'x'.repeat(64),
  'x'.repeat(254),
  'x'.repeat(257),
  'x'.repeat(4096),
  'x'.repeat(100_000),
  'é'.repeat(20_000),
] as const;

/** Any text: an edge one, or a random one of any code points (control characters included). */
export const anyText: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...EDGE_TEXTS) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 300 }) },
);

/** JSON values of every type, including the numbers at its edges and nested junk. */
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -0, -1, 1e-300, 1e308, -1e308, 2 ** 53 + 1, 0.5, '', [], {}),
  anyText,
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.jsonValue({ maxDepth: 4 }),
  fc.constant({ a: { b: [null, { c: [[[{}]]] }] } }),
);

/** Lower-case hex of `length` digits. */
export const hex = (length: number): fc.Arbitrary<string> =>
  fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: length, maxLength: length });

/** Candidates of the CNI spec's name rule (container ids, network names), bounded at `max`. */
export function cniNames(max: number): fc.Arbitrary<Candidate<string>> {
  const rule = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
  return fc.oneof(
    anyText.map((text) => ({ value: text, invalid: !rule.test(text) || text.length > max })),
    fc.constantFrom(valid('x'.repeat(max), 'longest'), invalid('x'.repeat(max + 1), 'one too long')),
    fc.constantFrom(valid('A_b.c-0'), invalid('-lead'), invalid('.lead'), invalid('a/b'), invalid('a b')),
  );
}
