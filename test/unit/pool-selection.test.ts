// Pool selection (domain/pool-selection): label selectors as Kubernetes judges them, and the pool
// of a pod from the pools' namespace and node selectors, the pod's and its namespace's
// `netlease.io/pools` annotation and the network config's pool, as a table. The calico#10502 rows:
// an annotation never takes a pool whose node selector does not match the pod's node.
import {
  LabelSelectorSchema,
  selectorMatches,
  selectorMisses,
  type LabelSelector,
} from '../../domain/label-selector';
import { PoolSpecSchema } from '../../domain/pool-spec';
import { describeIssues } from '../../domain/text-schemas';
import {
  selectPool,
  type PoolSelectors,
  type SelectedBy,
  type Selection,
  type SelectionInput,
} from '../../domain/pool-selection';

describe('label selectors', () => {
  const labels = { zone: 'eu', tier: 'web' };
  test.each<[string, LabelSelector, boolean]>([
    ['empty selects everything', {}, true],
    ['matchLabels all held', { matchLabels: { zone: 'eu', tier: 'web' } }, true],
    ['matchLabels one differs', { matchLabels: { zone: 'us' } }, false],
    ['In holds', { matchExpressions: [{ key: 'zone', operator: 'In', values: ['us', 'eu'] }] }, true],
    ['In of an absent key', { matchExpressions: [{ key: 'rack', operator: 'In', values: ['1'] }] }, false],
    [
      'NotIn of an absent key holds',
      { matchExpressions: [{ key: 'rack', operator: 'NotIn', values: ['1'] }] },
      true,
    ],
    ['NotIn of the value', { matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['eu'] }] }, false],
    ['Exists', { matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, true],
    ['DoesNotExist of a held key', { matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, false],
    [
      'matchLabels AND matchExpressions',
      { matchLabels: { zone: 'eu' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['db'] }] },
      false,
    ],
  ])('%s', (_, selector, matches) => {
    expect(selectorMatches(LabelSelectorSchema.parse(selector), labels)).toBe(matches);
  });

  test('a miss names the requirement and what the labels have', () => {
    const selector = {
      matchLabels: { zone: 'us' },
      matchExpressions: [{ key: 'rack', operator: 'Exists' as const }],
    };
    expect(selectorMisses(selector, labels)).toEqual(['zone=us (has zone=eu)', 'rack (has no rack)']);
  });

  test.each([
    [
      { matchExpressions: [{ key: 'zone', operator: 'In' }] },
      'nodeSelector.matchExpressions[0].values: In needs at least one value',
    ],
    [{ matchExpressions: [{ key: 'zone', operator: 'Exists', values: ['a'] }] }, 'Exists takes no values'],
    [
      { matchExpressions: [{ key: 'zone', operator: 'Near', values: ['a'] }] },
      'nodeSelector.matchExpressions[0].operator',
    ],
    [{ matchLabels: { 'bad key!': 'a' } }, 'matchLabels.bad key!: Invalid key in record'],
    [{ matchLabels: { zone: 'a b' } }, 'not a label value'],
    [{ matchLabel: { zone: 'a' } }, 'matchLabel'],
  ])('a pool spec with an invalid selector is refused: %j', (selector, message) => {
    const parsed = PoolSpecSchema.safeParse({ name: 'p', cidrs: ['10.0.0.0/16'], nodeSelector: selector });
    expect(parsed.success).toBe(false);
    expect(parsed.error && describeIssues(parsed.error)).toContain(message);
  });
});

const eu: PoolSelectors = { name: 'eu', nodeSelector: { matchLabels: { region: 'eu' } } };
const us: PoolSelectors = { name: 'us', nodeSelector: { matchLabels: { region: 'us' } } };
const anyPool: PoolSelectors = { name: 'default' };
const prod: PoolSelectors = {
  name: 'eu-prod',
  nodeSelector: { matchLabels: { region: 'eu' } },
  namespaceSelector: { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }] },
};

/** A pod of namespace `shop` (env=prod) on node `n1` (region=eu). */
function input(over: Partial<SelectionInput> & { podPools?: string; namespacePools?: string } = {}) {
  const { podPools, namespacePools, ...rest } = over;
  return {
    pools: [eu, us, anyPool, prod],
    pod: {
      namespace: 'shop',
      name: 'web-0',
      annotations: podPools === undefined ? {} : { 'netlease.io/pools': podPools },
    },
    namespace: {
      name: 'shop',
      labels: { env: 'prod' },
      annotations: namespacePools === undefined ? {} : { 'netlease.io/pools': namespacePools },
    },
    node: { name: 'n1', labels: { region: 'eu' } },
    ...rest,
  };
}

const pool = (name: string, by: SelectedBy): Selection => ({ pool: name, by });

test.each<[string, SelectionInput, Selection | RegExp]>([
  // Without annotations or a config pool: the most specific eligible pool, `default` among equals.
  ['the most specific eligible pool', input(), pool('eu-prod', 'selectors')],
  [
    'a namespace the specific pool does not select',
    input({ namespace: { name: 'dev', labels: { env: 'dev' } } }),
    pool('eu', 'selectors'),
  ],
  [
    'a node of no region: the catch-all',
    input({ node: { name: 'n2', labels: {} } }),
    pool('default', 'selectors'),
  ],
  [
    'equally specific: `default` first, then by name',
    input({ pools: [{ name: 'b' }, { name: 'a' }, { name: 'default' }] }),
    pool('default', 'selectors'),
  ],
  [
    'equally specific, no `default`: by name',
    input({ pools: [{ name: 'b' }, { name: 'a' }] }),
    pool('a', 'selectors'),
  ],
  [
    'none matching: no-pool-for-pod naming each pool and its miss',
    input({ pools: [eu, us], node: { name: 'n3', labels: { region: 'ap' } } }),
    /^no-pool-for-pod: pod shop\/web-0 on node n3: no pool's selectors match: pool eu: node n3 does not match its nodeSelector: region=eu \(has region=ap\); pool us: .*region=us \(has region=ap\)$/,
  ],
  [
    'no pools known: the default pool, as before selection',
    input({ pools: [] }),
    pool('default', 'network-config'),
  ],
  // The network config's pool, when it names one: taken if eligible, refused if not.
  [
    'the network config names an eligible pool',
    input({ configPool: 'default' }),
    pool('default', 'network-config'),
  ],
  [
    'the network config names a pool of another region',
    input({ configPool: 'us' }),
    /^no-pool-for-pod: .*the network config's pool is not for it: pool us: node n1 does not match its nodeSelector: region=us \(has region=eu\)$/,
  ],
  [
    'the network config names a pool not (yet) known: left to the served check',
    input({ configPool: 'new' }),
    pool('new', 'network-config'),
  ],
  // Annotations: pod beats namespace; the first eligible named pool; never an unnamed one.
  [
    'a pod annotation names an eligible pool',
    input({ podPools: 'default' }),
    pool('default', 'pod-annotation'),
  ],
  [
    'a namespace annotation names an eligible pool',
    input({ namespacePools: 'eu' }),
    pool('eu', 'namespace-annotation'),
  ],
  [
    'the pod annotation beats the namespace one',
    input({ podPools: 'eu', namespacePools: 'default' }),
    pool('eu', 'pod-annotation'),
  ],
  [
    'the annotation beats the network config',
    input({ podPools: 'eu', configPool: 'default' }),
    pool('eu', 'pod-annotation'),
  ],
  [
    'named pools in order: the first eligible',
    input({ podPools: 'us, eu,default' }),
    pool('eu', 'pod-annotation'),
  ],
  [
    'calico#10502: a namespace annotation naming a pool of another region is refused, not replaced',
    input({ namespacePools: 'us' }),
    /^no-pool-for-pod: pod shop\/web-0 on node n1: namespace shop's annotation netlease.io\/pools names no pool for it: pool us: node n1 does not match its nodeSelector: region=us \(has region=eu\)$/,
  ],
  [
    'calico#10502 on the pod annotation, with eligible pools unnamed',
    input({ podPools: 'us', namespacePools: 'eu' }),
    /^no-pool-for-pod: pod shop\/web-0 on node n1: its annotation netlease.io\/pools names no pool for it: pool us: node n1/,
  ],
  [
    'a named pool of another namespace',
    input({ podPools: 'eu-prod', namespace: { name: 'dev', labels: { env: 'dev' } } }),
    /pool eu-prod: namespace dev does not match its namespaceSelector: env=prod \(has env=dev\)$/,
  ],
  [
    'labels not read: a pool with selectors is not judged eligible',
    input({ podPools: 'eu', node: { name: 'n1' } }),
    /pool eu: its nodeSelector cannot be judged: the labels of node n1 are not read$/,
  ],
  [
    'labels not read: a pool without selectors is',
    input({ podPools: 'default', node: { name: 'n1' } }),
    pool('default', 'pod-annotation'),
  ],
  [
    'an unknown pool in the annotation: a clear error naming it',
    input({ namespacePools: 'eu,eur' }),
    /^invalid-pool-annotation: namespace shop's annotation netlease.io\/pools: names "eur", which the control plane does not serve \(it serves eu, us, default, eu-prod\)$/,
  ],
  [
    'a name that is no pool name',
    input({ podPools: 'eu,,us' }),
    /^invalid-pool-annotation: pod shop\/web-0's annotation netlease.io\/pools: "" is not a pool name/,
  ],
  ['an empty annotation', input({ podPools: '' }), /^invalid-pool-annotation: pod shop\/web-0's annotation/],
  ['upper case', input({ podPools: 'EU' }), /"EU" is not a pool name/],
])('%s', (_, given, expected) => {
  const selected = selectPool(given);
  if (expected instanceof RegExp) {
    expect(selected).toMatchObject({ refused: expect.any(String) });
    const { refused, message } = selected as { refused: string; message: string };
    expect(`${refused}: ${message}`).toMatch(expected);
  } else expect(selected).toEqual(expected);
});

test('the order does not depend on the order the pools are listed in', () => {
  const pools = [anyPool, us, prod, eu];
  for (const rotation of [0, 1, 2, 3]) {
    const rotated = [...pools.slice(rotation), ...pools.slice(0, rotation)];
    expect(selectPool(input({ pools: rotated }))).toEqual(pool('eu-prod', 'selectors'));
  }
});
