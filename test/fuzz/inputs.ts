// A generated CNI call: a command, a valid environment and configuration for it, then zero to
// three hostile changes (to a variable, a configuration field, or stdin as text).
import fc from 'fast-check';
import { envChange, validCommand, validEnv, type EnvChange } from './env-inputs';
import { printable, type FuzzInput, type FuzzTerms } from './input';
import { applyChange, baseConf, confChanges, type BaseConf, type ConfChange } from './netconf-inputs';
import { textChanges, type TextChange } from './stdin-inputs';

type Change = { env: EnvChange } | { conf: ConfChange } | { text: TextChange };

function changes(terms: FuzzTerms, cmd: string, prefix: string): fc.Arbitrary<Change> {
  return fc.oneof(
    { weight: 4, arbitrary: envChange(terms, cmd).map((env) => ({ env })) },
    { weight: 5, arbitrary: confChanges(terms, cmd, prefix).map((conf) => ({ conf })) },
    { weight: 2, arbitrary: textChanges(terms).map((text) => ({ text })) },
  );
}

/** How many changes: a valid call now and then, mostly one change, sometimes a few. */
const howMany = fc.oneof(
  { weight: 1, arbitrary: fc.constant(0) },
  { weight: 6, arbitrary: fc.constant(1) },
  { weight: 3, arbitrary: fc.integer({ min: 2, max: 3 }) },
);

/** What a change sets: a variable, or configuration paths. */
const targets = (c: Change): string[] =>
  'env' in c
    ? [`env:${c.env.name}`]
    : 'conf' in c
      ? [c.conf.path, ...Object.keys(c.conf.also ?? {})].map((path) => `conf:${path}`)
      : [];
/** A change at `later` replaces what one at `earlier` (the same place, or under it) did. */
const replaces = (later: string, earlier: string) => earlier === later || earlier.startsWith(`${later}.`);

/** The changes made, in order; one a later change replaced is no longer in the call. */
function applyAll(env: Record<string, string>, conf: Record<string, unknown>, all: Change[]): Change[] {
  const made: Change[] = [];
  for (const change of all) {
    if ('env' in change) {
      if (change.env.value === undefined) delete env[change.env.name];
      else env[change.env.name] = change.env.value;
    }
    if ('conf' in change && !applyChange(conf, change.conf)) continue;
    const undone = (c: Change) => targets(change).some((at) => targets(c).some((t) => replaces(at, t)));
    made.splice(0, made.length, ...made.filter((c) => !undone(c)));
    made.push(change);
  }
  return made;
}

function build(env: Record<string, string>, base: BaseConf, all: Change[]): FuzzInput {
  const finalEnv: Record<string, string> = { ...env };
  const conf = structuredClone(base.conf);
  const made = applyAll(finalEnv, conf, all);
  keepTemporalAddress(conf, base);
  let stdin: { text: string; bytes?: Uint8Array } = { text: JSON.stringify(conf) };
  for (const change of made) if ('text' in change) stdin = change.text.apply(stdin);
  const mutations = made.map((c) => ('env' in c ? c.env : 'conf' in c ? c.conf : c.text).mutation);
  return printable({
    env: finalEnv,
    stdin: stdin.text,
    ...(stdin.bytes ? { stdinBytes: stdin.bytes } : {}),
    mutations,
  });
}

/**
 * A `temporal` object a change left without an address (`temporal.tls` set after `temporal: 5`)
 * would send the agent to the default, 127.0.0.1:7233, where another Temporal may be listening:
 * it gets the site's address back. Nothing the fuzzer makes leaves this machine's test servers.
 */
function keepTemporalAddress(conf: Record<string, unknown>, base: BaseConf): void {
  const { address } = (base.conf.temporal ?? (base.conf.ipam as Record<string, unknown>).temporal) as {
    address: string;
  };
  for (const place of [conf, conf.ipam]) {
    const temporal = (place as Record<string, unknown> | undefined)?.temporal;
    if (temporal && typeof temporal === 'object' && !Array.isArray(temporal) && !('address' in temporal))
      (temporal as Record<string, unknown>).address = address;
  }
}

/** CNI calls as a runtime could make them, mostly hostile. */
export function fuzzInputs(terms: FuzzTerms): fc.Arbitrary<FuzzInput> {
  return validCommand.chain((cmd) =>
    fc
      .record({ env: validEnv(terms, cmd), base: baseConf(terms, cmd), count: howMany })
      .chain(({ env, base, count }) =>
        fc
          .array(changes(terms, cmd, base.prefix), { minLength: count, maxLength: count })
          .map((all) => build(env, base, all)),
      ),
  );
}
