// The network configuration on stdin: a valid one (netlease as the main plugin, or as the IPAM
// plugin a main plugin delegates to), and changes to it field by field: wrong types, numbers at
// their edges, nested junk, unsupported versions, unknown modes and pools, junk prevResult.
import fc from 'fast-check';
import { anyJson, anyText, cniNames, hex, invalid, valid, type Candidate } from './hostile-values';
import type { FuzzTerms, Mutation } from './input';

export type Conf = Record<string, unknown>;

/** The settings netlease reads, at the top level or under `ipam` when delegated. */
function settings(terms: FuzzTerms, mode: string): Conf {
  return {
    type: 'netlease',
    pool: terms.pool,
    nodeName: terms.node,
    mode,
    temporal: { address: terms.temporalAddress, taskQueue: terms.taskQueue },
    timeoutSeconds: 10,
    agentSocket: terms.agentSocket,
    deleteQueue: terms.deleteQueue,
  };
}

export interface BaseConf {
  conf: Conf;
  /** Where netlease's settings are: '' or 'ipam.'. */
  prefix: string;
}

/** A valid configuration for `cmd` (CHECK is not defined for 0.3.x). */
export const baseConf = (terms: FuzzTerms, cmd: string): fc.Arbitrary<BaseConf> =>
  fc
    .record({
      cniVersion: fc.constantFrom('1.1.0', '1.0.0', '0.4.0', ...(cmd === 'CHECK' ? [] : ['0.3.1'])),
      mode: fc.constantFrom('ipam', 'ipam', 'ptp'),
      delegated: fc.boolean(),
    })
    .map(({ cniVersion, mode, delegated }) => {
      // The shim's settings and Temporal on both levels: whichever a change of `type` or `ipam` makes
      // the shim and the agent read, they reach the test's agent and the test's Temporal.
      const temporal = { address: terms.temporalAddress, taskQueue: terms.taskQueue };
      const shim = { agentSocket: terms.agentSocket, deleteQueue: terms.deleteQueue, temporal };
      return delegated
        ? {
            conf: {
              cniVersion,
              name: 'netlease-test',
              type: 'bridge',
              ...shim,
              ipam: settings(terms, 'ipam'),
            },
            prefix: 'ipam.',
          }
        : { conf: { cniVersion, name: 'netlease-test', ...settings(terms, mode), ipam: shim }, prefix: '' };
    });

/** A change to one field: `value` undefined removes it. */
export interface ConfChange {
  path: string;
  value: unknown;
  mutation: Mutation;
  /** Paths set as well (a dead Temporal address comes with a short call budget). */
  also?: Record<string, unknown>;
}

const shortJson = (value: unknown): string => {
  const text = JSON.stringify(value) ?? 'undefined';
  return text.length > 50 ? `${text.slice(0, 50)}…` : text;
};

const lastName = (path: string) => path.split('.').pop() ?? path;

function confChange(path: string, c: Candidate<unknown>, extra: Partial<Mutation> = {}): ConfChange {
  return {
    path,
    value: c.value,
    mutation: {
      field: path,
      what: c.what ?? (c.value === undefined ? 'removed' : `set to ${shortJson(c.value)}`),
      invalid: c.invalid,
      codes: [7],
      names: [lastName(path)],
      ...extra,
    },
  };
}

/** Any JSON value but one of type `type` (the field's own): always invalid there. */
const wrongType = (type: 'string' | 'number' | 'object' | 'array') =>
  anyJson.filter((v) => {
    if (type === 'array') return !Array.isArray(v);
    if (type === 'object') return v === null || typeof v !== 'object' || Array.isArray(v);
    return typeof v !== type;
  });

const DNS_LABEL = /^(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_NAME = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const byRule = (rule: RegExp) => anyText.map((t) => ({ value: t as unknown, invalid: !rule.test(t) }));

const versions = fc.oneof(
  fc.constantFrom('0.3.0', '0.2.0', '2.0.0', '1.1.0 ', '', '1.1', 'v1.1.0', 'x'.repeat(100_000)),
  anyText.filter((t) => !['0.3.1', '0.4.0', '1.0.0', '1.1.0'].includes(t)),
);

/** Changes to the envelope: the fields every plugin's config has. */
function envelopeChanges(): fc.Arbitrary<ConfChange> {
  return fc.oneof(
    versions.map((v) => confChange('cniVersion', invalid(v), { codes: [1], names: ['version'] })),
    wrongType('string').map((v) => confChange('cniVersion', invalid(v))),
    fc.constant(confChange('cniVersion', invalid(undefined))),
    cniNames(253).map((c) => confChange('name', c)),
    wrongType('string').map((v) => confChange('name', invalid(v))),
    fc
      .oneof(
        fc.constantFrom(invalid(''), invalid('x'.repeat(256)), invalid(5)),
        anyText.map((t) => ({ value: t as unknown, invalid: t.length > 255 || t === '' })),
      )
      .map((c) => confChange('type', c)),
    wrongType('object').map((v) => confChange('ipam', invalid(v))),
    anyJson.map((v) => confChange('prevResult', valid(v), { names: ['prevResult'] })),
    fc
      .constantFrom({ ips: 'x' }, { ips: [null] }, { ips: 5 }, { ips: [{ address: 5 }] }, { ips: [{}] })
      .map((v) => confChange('prevResult', valid(v))),
    anyJson.map((v) =>
      confChange('cni.dev/valid-attachments', valid(v), { names: ['cni.dev/valid-attachments'] }),
    ),
    fc
      .tuple(fc.constantFrom('runtimeConfig', 'args', 'capabilities', 'dns', 'x-unknown'), anyJson)
      .map(([path, v]) => confChange(path, valid(v), { codes: undefined })),
  );
}

/** Temporal addresses with no DNS name in them: nothing leaves loopback. */
function addresses(terms: FuzzTerms, prefix: string): fc.Arbitrary<ConfChange> {
  const path = `${prefix}temporal.address`;
  const also = { [`${prefix}timeoutSeconds`]: 1 };
  const dead = [`127.0.0.1:${terms.deadPort}`, `[::1]:${terms.deadPort}`, `localhost:${terms.deadPort}`];
  const malformed = ['127.0.0.1', '127.0.0.1:', ':', '127.0.0.1:0', '127.0.0.1:99999', '[::1', '::1:7233x'];
  return fc.oneof(
    fc.constantFrom(...dead).map((a) => ({ ...confChange(path, valid(a), { transient: true }), also })),
    fc
      .constantFrom(...malformed, `http://127.0.0.1:${terms.deadPort}`, `unix:///tmp/${terms.taskQueue}`)
      .map((a) => ({ ...confChange(path, invalid(a), { names: ['address'] }), also })),
    fc.constantFrom('', 'x'.repeat(262)).map((a) => confChange(path, invalid(a))),
    wrongType('string').map((v) => confChange(path, invalid(v))),
  );
}

/** Changes to netlease's own settings (under `prefix`). */
function settingsChanges(terms: FuzzTerms, prefix: string): fc.Arbitrary<ConfChange> {
  const at = (path: string, c: Candidate<unknown>, extra: Partial<Mutation> = {}) =>
    confChange(prefix + path, c, extra);
  // Only the site's pool, namespace and task queue are served: any other is a mistake in the config.
  const served = (served: string) => anyText.map((t) => ({ value: t as unknown, invalid: t !== served }));
  return fc.oneof(
    byRule(DNS_LABEL).map((c) => at('pool', invalid(c.value), c.invalid ? {} : { addOnly: true })),
    fc.constant(at('pool', invalid('nope', 'a pool nobody serves'), { addOnly: true })),
    fc.constant(at('pool', invalid(5))),
    byRule(DNS_NAME).map((c) => at('nodeName', c, c.invalid ? {} : { transient: true })),
    fc.constant(at('nodeName', valid(undefined, 'removed: the host name'), { transient: true })),
    fc.constantFrom(invalid('macvtap'), invalid('PTP'), invalid(''), invalid(5)).map((c) => at('mode', c)),
    fc.constant(at('mode', prefix ? invalid('ptp', 'ptp when delegated') : valid('ptp'))),
    fc.constantFrom(invalid(5), invalid('x'), invalid([]), invalid(null)).map((c) => at('temporal', c)),
    addresses(terms, prefix),
    served('default').map((c) => at('temporal.namespace', c, { names: ['namespace', 'pool'] })),
    fc.constant(at('temporal.namespace', invalid('nope'), { names: ['namespace', 'pool'] })),
    // It exists (the server's own): only ADD, asking for the pool there, is refused.
    fc.constant(at('temporal.namespace', invalid('temporal-system'), { names: ['pool'], addOnly: true })),
    // The offer of a pre-produced lease answers its pod's ADD: that lease runs where the pool is.
    served(terms.taskQueue).map((c) => {
      const text = c.value as string;
      // Refused by every command (empty, too long, a control character); else only ADD asks.
      const schema = text === '' || text.length > 255 || /\p{Cc}/u.test(text);
      return at('temporal.taskQueue', c, {
        names: ['taskQueue', 'pool'],
        offerMayAnswer: true,
        addOnly: !schema,
      });
    }),
    hex(6).map((h) =>
      at('temporal.taskQueue', invalid(`fz-other-${h}`, 'a task queue nobody serves'), {
        names: ['taskQueue', 'pool'],
        offerMayAnswer: true,
        addOnly: true,
      }),
    ),
    fc
      .constantFrom(
        invalid({ serverNameOverride: 5 }),
        invalid({ clientCertFile: '/nonexistent.pem' }),
        invalid({ clientCertFile: '/nonexistent.pem', clientKeyFile: '/nonexistent.key' }),
        invalid({ junk: true }),
      )
      .map((c) =>
        at('temporal.tls', c, { codes: [5, 7], names: ['tls', 'clientCertFile', 'clientKeyFile'] }),
      ),
    fc
      .constantFrom(0, -1, 601, 1e308, '5', null, true, [], 1e-9, 600.5)
      .map((v) => at('timeoutSeconds', invalid(v))),
    fc
      .constantFrom(
        invalid('x'),
        invalid([{ dst: '10.0.0.0/40' }]),
        invalid([{ dst: '0.0.0.0/0', gw: 'router' }]),
        invalid([5]),
        invalid(Array.from({ length: 300 }, () => ({ dst: '10.0.0.0/8' }))),
        valid([]),
      )
      .map((c) => at('routes', c)),
    fc
      .constantFrom(invalid('relative.sock'), invalid(''), invalid(`/${'s'.repeat(200)}`), invalid(5))
      .map((c) => at('agentSocket', c)),
    fc
      .constantFrom(invalid('relative/queue'), invalid(''), invalid(`/${'q'.repeat(200)}`), invalid(5))
      .map((c) => at('deleteQueue', c)),
    fc.constantFrom(invalid('NETLEASE'), invalid(5)).map((c) => at('type', c)),
  );
}

/** One hostile change to the configuration of a `cmd` call whose settings are under `prefix`. */
export function confChanges(terms: FuzzTerms, cmd: string, prefix: string): fc.Arbitrary<ConfChange> {
  // A DEL that cannot reach Temporal is queued and kept until it can: not for a dead address.
  const settings = settingsChanges(terms, prefix).filter((c) => !(cmd === 'DEL' && c.mutation.transient));
  return fc.oneof(envelopeChanges(), settings);
}

/**
 * Sets (or, with undefined, removes) `path` in `conf`. False when a change made before left no
 * object on the way (`ipam` set to 5): this one does not apply, and the call carries the other.
 */
export function applyChange(conf: Conf, { path, value, also }: ConfChange): boolean {
  if (!setPath(conf, path, value)) return false;
  for (const [extraPath, extra] of Object.entries(also ?? {})) setPath(conf, extraPath, extra);
  return true;
}

function setPath(conf: Conf, path: string, value: unknown): boolean {
  const keys = path.startsWith('cni.dev/') ? [path] : path.split('.');
  let object = conf;
  for (const key of keys.slice(0, -1)) {
    const next = object[key];
    if (next === undefined) object[key] = {};
    else if (next === null || typeof next !== 'object' || Array.isArray(next)) return false;
    object = object[key] as Conf;
  }
  const last = keys[keys.length - 1] as string;
  if (value === undefined) delete object[last];
  else object[last] = value;
  return true;
}
