// The CNI environment: a valid call's variables for each command, and hostile changes to them
// (junk commands, variables missing or extra, ids, paths and interface names across their rules,
// CNI_ARGS with bad pairs, separators, duplicates and bad Kubernetes keys).
import fc from 'fast-check';
import { anyText, cniNames, hex, invalid, valid, type Candidate } from './hostile-values';
import { POD_NETNS, type FuzzTerms, type Mutation } from './input';

export const COMMANDS = ['ADD', 'DEL', 'CHECK', 'GC', 'STATUS', 'VERSION'] as const;

/** ADD most: it is the call that makes state. */
const command = fc.oneof(
  { weight: 8, arbitrary: fc.constant('ADD') },
  { weight: 4, arbitrary: fc.constant('DEL') },
  { weight: 3, arbitrary: fc.constant('CHECK') },
  { weight: 1, arbitrary: fc.constantFrom('GC', 'STATUS', 'VERSION') },
);

/** A few ids reused across calls, so DEL and CHECK meet leases earlier ADDs made. */
const KNOWN = ['0', '1', '2'];

/**
 * Pods, containers and interfaces come from pools the size of a node's (32 each, 8 interface
 * names): a long run does not pile up thousands of leases on one node, which no GC walks in time.
 */
const onePodOf32 = fc.integer({ min: 0, max: 31 });

function podArgs(terms: FuzzTerms): fc.Arbitrary<string | undefined> {
  const pod = (name: string, uid: string) =>
    `K8S_POD_NAMESPACE=${terms.podNamespace};K8S_POD_NAME=${name};K8S_POD_UID=${uid}`;
  return fc.oneof(
    { weight: 4, arbitrary: onePodOf32.map((n) => pod(`fz-p${n}`, `fz-p${n}`)) },
    { weight: 2, arbitrary: fc.constantFrom(...KNOWN).map((k) => pod(`known-${k}`, `fz-known-${k}`)) },
    { weight: 2, arbitrary: fc.constantFrom(...terms.offered).map((p) => pod(p.name, p.uid)) },
    { weight: 1, arbitrary: fc.constant(undefined) }, // no pod: the container stands in (cnitool)
  );
}

/** A valid call's environment for `cmd`. */
export function validEnv(terms: FuzzTerms, cmd: string): fc.Arbitrary<Record<string, string>> {
  return fc
    .record({
      containerId: fc.oneof(
        onePodOf32.map((n) => `fz-c${n}`),
        fc.constantFrom(...KNOWN).map((k) => `fz-ctr-${k}`),
      ),
      ifName: fc.constantFrom('eth0', 'net1', 'f0', 'f1', 'f2', 'f3', 'f4', 'f5'),
      args: podArgs(terms),
    })
    .map(({ containerId, ifName, args }) => ({
      CNI_COMMAND: cmd,
      CNI_CONTAINERID: containerId,
      CNI_NETNS: POD_NETNS,
      CNI_IFNAME: ifName,
      CNI_PATH: '/opt/cni/bin',
      ...(args === undefined ? {} : { CNI_ARGS: args }),
    }));
}

export const validCommand = command;

/** A change to one variable: the new value (undefined: removed) and the mutation it is. */
export interface EnvChange {
  name: string;
  value: string | undefined;
  mutation: Mutation;
}

const change = (name: string, candidate: Candidate<string | undefined>, extra: Partial<Mutation> = {}) => ({
  name,
  value: candidate.value,
  mutation: {
    field: name,
    what: candidate.what ?? (candidate.value === undefined ? 'removed' : `set to ${short(candidate.value)}`),
    invalid: candidate.invalid,
    codes: [4],
    names: [name],
    ...extra,
  },
});

const short = (text: string) =>
  text.length > 40 ? `${JSON.stringify(text.slice(0, 40))}…` : JSON.stringify(text);

const commands: fc.Arbitrary<Candidate<string>> = fc.oneof(
  fc
    .constantFrom('add', 'ADD ', ' ADD', 'ADDX', 'ADD\n', 'DEL;ADD', 'VERSION\u0000', 'ÄDD')
    .map((c) => invalid(c)),
  anyText.map((c) => ({ value: c, invalid: !(COMMANDS as readonly string[]).includes(c) })),
);

/** Linux interface names: at most 15 bytes, no "/", ":", "%" or white space, not "." or "..". */
const ifNames: fc.Arbitrary<Candidate<string>> = fc.oneof(
  fc.constantFrom(
    invalid('eth:0'),
    invalid('a/b'),
    invalid('eth 0'),
    invalid('.'),
    invalid('..'),
    invalid('x'.repeat(16)),
    invalid('é'.repeat(8), '8 two-byte characters (16 bytes)'),
    valid('x'.repeat(15), '15 bytes'),
    valid('é'.repeat(7), '7 two-byte characters'),
    invalid('lo', 'lo, which every namespace has'),
    invalid('eth%d', 'a kernel name template'),
  ),
  anyText.map((text) => {
    const bytes = Buffer.byteLength(text);
    const broken = bytes === 0 || bytes > 15 || /[/:%\s]/.test(text) || text === '.' || text === '..';
    return { value: text, invalid: broken };
  }),
);

/** Absolute paths shorter than PATH_MAX; a path to no namespace is a retryable wait in ptp mode. */
const netnsPaths = (terms: FuzzTerms): fc.Arbitrary<Candidate<string>> =>
  fc.oneof(
    fc.constantFrom(
      invalid('var/run/netns/x', 'relative'),
      invalid('x', 'relative'),
      invalid(`/${'n'.repeat(4095)}`, 'PATH_MAX bytes'),
    ),
    anyText.filter((t) => !t.startsWith('/')).map((t) => invalid(t)),
    hex(6).map((h) => valid(`/var/run/netns/fz-none-${h}`, 'a namespace that does not exist')),
    fc.constant(valid(`/var/run/netns/../netns/${terms.taskQueue}-none`, 'with ..')),
  );

const K8S_RULES: Record<string, RegExp> = {
  K8S_POD_UID: /^[A-Za-z0-9][A-Za-z0-9-]{0,127}$/,
  K8S_POD_NAMESPACE: /^(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?$/,
  K8S_POD_NAME: /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
};

/** The conventions' model of CNI_ARGS: ";"-separated KEY=VALUE pairs, the last of a key wins. */
function argsBroken(text: string): boolean {
  const values = new Map<string, string>();
  for (const pair of text.split(';').filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq <= 0) return true;
    values.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return Object.entries(K8S_RULES).some(([key, rule]) => {
    const value = values.get(key);
    return value !== undefined && value !== '' && !rule.test(value);
  });
}

const args = (text: string, what: string): Candidate<string> => ({
  value: text,
  invalid: argsBroken(text),
  what,
});

/** CNI_ARGS: KEY=VALUE pairs separated by ";". */
const cniArgs = (terms: FuzzTerms): fc.Arbitrary<Candidate<string>> =>
  fc.oneof(
    fc.constantFrom(
      args('K8S_POD_UID', 'a pair without "="'),
      args('=x', 'an empty key'),
      args(';;;', 'only separators'),
      args('IgnoreUnknown=1;FOO=bar;K8S_POD_UID=a', 'unknown keys'),
      args('K8S_POD_UID=a;K8S_POD_UID=b', 'K8S_POD_UID twice'),
      args('K8S_POD_UID=', 'an empty K8S_POD_UID'),
      args('a=b=c', 'a value with "="'),
      args(`K8S_POD_UID=${'u'.repeat(129)}`, 'a 129-character K8S_POD_UID'),
      args(`K8S_POD_NAMESPACE=${'n'.repeat(64)};K8S_POD_NAME=p;K8S_POD_UID=u`, 'a 64-character namespace'),
      args(`K8S_POD_NAME=${'p'.repeat(254)};K8S_POD_UID=u`, 'a 254-character pod name'),
      args('K8S_POD_UID=a/b', 'a UID with "/"'),
      args('K8S_POD_NAME=Upper', 'an upper-case pod name'),
    ),
    anyText.map((uid) =>
      args(
        `K8S_POD_NAMESPACE=${terms.podNamespace};K8S_POD_NAME=p;K8S_POD_UID=${uid}`,
        `K8S_POD_UID=${short(uid)}`,
      ),
    ),
    anyText.map((ns) =>
      args(`K8S_POD_NAMESPACE=${ns};K8S_POD_NAME=p;K8S_POD_UID=u`, `K8S_POD_NAMESPACE=${short(ns)}`),
    ),
    anyText.map((text) => args(text, `raw ${short(text)}`)),
  );

/** One hostile change to the environment of a `cmd` call. */
export function envChange(terms: FuzzTerms, cmd: string): fc.Arbitrary<EnvChange> {
  const needed = (name: string) =>
    (name === 'CNI_NETNS' ? ['ADD', 'CHECK'] : ['ADD', 'DEL', 'CHECK']).includes(cmd);
  return fc.oneof(
    commands.map((c) => change('CNI_COMMAND', c)),
    fc.constantFrom('CNI_COMMAND', 'CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_ARGS').map((name) =>
      change(name, {
        value: undefined,
        invalid: name === 'CNI_COMMAND' || (name !== 'CNI_ARGS' && needed(name)),
      }),
    ),
    cniNames(256).map((c) => change('CNI_CONTAINERID', c)),
    netnsPaths(terms).map((c) =>
      change('CNI_NETNS', c, c.invalid ? {} : { transient: true, codes: undefined }),
    ),
    ifNames.map((c) => change('CNI_IFNAME', c)),
    cniArgs(terms).map((c) => change('CNI_ARGS', c, { names: ['CNI_ARGS'] })),
    fc
      .tuple(fc.constantFrom('CNI_FOO', 'CNI_PATH', 'CNI_COMMAND ', 'NOT_CNI'), anyText)
      .map(([name, value]) => change(name, valid(value, `extra ${name}=${short(value)}`))),
  );
}
