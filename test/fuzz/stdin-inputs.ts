// Changes to stdin as text: cut short, a character slipped in, replaced by other JSON or none,
// a key given twice, nested ten thousand deep, padded to the size limits, bytes that are not UTF-8.
import fc from 'fast-check';
import { anyText } from './hostile-values';
import type { FuzzTerms, Mutation } from './input';

/** The shim reads at most this much stdin (cni/shim/main.go maxStdin). */
export const SHIM_MAX_STDIN = 16 << 20;

export interface Stdin {
  text: string;
  bytes?: Uint8Array;
}

export interface TextChange {
  apply(stdin: Stdin): Stdin;
  mutation: Mutation;
}

const stdinChange = (mutation: Omit<Mutation, 'field'>, apply: (stdin: Stdin) => Stdin): TextChange => ({
  apply,
  mutation: { field: 'stdin', ...mutation },
});

/** `text` with `insert` after its first "{" (or in front, when it has none). */
const afterBrace = (text: string, insert: string) => {
  const at = text.indexOf('{') + 1;
  return text.slice(0, at) + insert + text.slice(at);
};
/** `text` with `insert` before its last "}". */
const beforeLastBrace = (text: string, insert: string) => {
  const at = text.lastIndexOf('}');
  return at < 0 ? text + insert : text.slice(0, at) + insert + text.slice(at);
};

const cut = fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }).map((fraction) =>
  stdinChange({ what: `cut at ${(fraction * 100).toFixed(1)}%`, invalid: true, codes: [6] }, ({ text }) => ({
    text: text.slice(0, Math.floor(fraction * text.length)),
  })),
);

const slipped = fc
  .tuple(
    fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
    anyText.filter((t) => t.length > 0),
  )
  .map(([fraction, insert]) =>
    stdinChange({ what: `${JSON.stringify(insert.slice(0, 20))} slipped in`, invalid: false }, ({ text }) => {
      const at = Math.floor(fraction * text.length);
      return { text: text.slice(0, at) + insert + text.slice(at) };
    }),
  );

/** Other JSON, or none; objects keep the test agent's socket (the shim's defaults have no agent here). */
const replaced = (terms: Pick<FuzzTerms, 'agentSocket' | 'deleteQueue'>) => {
  const shim = `"agentSocket":${JSON.stringify(terms.agentSocket)},"deleteQueue":${JSON.stringify(terms.deleteQueue)}`;
  return fc
    .constantFrom(
      '',
      ' \n',
      'null',
      '[]',
      '"x"',
      '42',
      'true',
      'not json',
      '{',
      '\ufeff{}',
      `{${shim}}`,
      `{"cniVersion":"1.1.0",${shim}}`,
    )
    .map((other) =>
      stdinChange({ what: `replaced by ${JSON.stringify(other)}`, invalid: true, codes: [6, 7] }, () => ({
        text: other,
      })),
    );
};

const trailing = fc.constantFrom(' x', '{}', ',', ']').map((junk) =>
  stdinChange(
    { what: `${JSON.stringify(junk)} after the object`, invalid: true, codes: [6] },
    ({ text }) => ({
      text: text + junk,
    }),
  ),
);

/** A key twice: the last one wins in both the shim's reader and the agent's. */
const twice = fc.constantFrom(
  stdinChange(
    { what: 'an unsupported cniVersion first, the valid one later', invalid: false },
    ({ text }) => ({
      text: afterBrace(text, '"cniVersion":"9.9.9",'),
    }),
  ),
  stdinChange(
    { what: 'an unsupported cniVersion last', invalid: true, codes: [1], names: ['version'] },
    ({ text }) => ({ text: beforeLastBrace(text, ',"cniVersion":"9.9.9"') }),
  ),
);

const nested = fc.constantFrom(100, 9_999, 10_000, 100_000).map((depth) =>
  stdinChange(
    { what: `a value nested ${depth} deep`, invalid: false, shimUnreadable: depth >= 10_000 },
    ({ text }) => ({
      text: afterBrace(text, `"x-deep":${'['.repeat(depth)}${']'.repeat(depth)},`),
    }),
  ),
);

/** Near the shim's limit, and a body twice stdin's size once quoted (each `\"` becomes `\\\"`). */
const padded = fc
  .constantFrom(
    { what: '1 MiB of white space', size: 1 << 20, fill: ' ' },
    { what: 'white space up to the shim limit', size: SHIM_MAX_STDIN, fill: ' ' },
    { what: 'white space one byte past the shim limit', size: SHIM_MAX_STDIN + 1, fill: ' ' },
    { what: '10 MiB of escaped quotes in a string', size: 10 << 20, fill: '\\"' },
  )
  .map(({ what, size, fill }) =>
    stdinChange({ what, invalid: false }, ({ text }) => {
      if (fill === ' ') return { text: text + ' '.repeat(Math.max(0, size - Buffer.byteLength(text))) };
      const pairs = Math.max(0, Math.floor((size - Buffer.byteLength(text) - 12) / 2));
      return { text: afterBrace(text, `"x-pad":"${fill.repeat(pairs)}",`) };
    }),
  );

/** Bytes no UTF-8 decoder accepts, in a string value (the shim passes them on as they are). */
const notUtf8 = fc
  .constantFrom([0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80])
  .map((bad) =>
    stdinChange(
      { what: `bytes ${bad.map((b) => b.toString(16)).join(' ')} in a string`, invalid: false },
      ({ text }) => {
        const whole = afterBrace(text, '"x-bytes":"",');
        const at = whole.indexOf('"x-bytes":""') + '"x-bytes":"'.length;
        const bytes = Buffer.concat([
          Buffer.from(whole.slice(0, at)),
          Buffer.from(bad),
          Buffer.from(whole.slice(at)),
        ]);
        return { text: bytes.toString('utf8'), bytes };
      },
    ),
  );

export const textChanges = (terms: FuzzTerms): fc.Arbitrary<TextChange> =>
  fc.oneof(
    { weight: 3, arbitrary: cut },
    { weight: 2, arbitrary: slipped },
    { weight: 2, arbitrary: replaced(terms) },
    { weight: 1, arbitrary: trailing },
    { weight: 1, arbitrary: twice },
    { weight: 1, arbitrary: nested },
    { weight: 1, arbitrary: padded },
    { weight: 1, arbitrary: notUtf8 },
  );
