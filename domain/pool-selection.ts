// Which pool a pod interface's addresses come from (issue 29 item 3). A pool may carry a
// namespace selector and a node selector, and is eligible for a pod only when both match (the
// pod's namespace's labels, its node's labels). A pod annotation, else its namespace's, may name
// pools (`netlease.io/pools: a,b`): the first eligible one in that order is taken, and a named
// pool that is not eligible is never replaced by an unnamed one (calico#10502: a namespace
// annotation chose a pool whose node selector did not match, and pods got the wrong region's
// addresses). Without an annotation, the network config's `pool` if it names one (eligible too),
// else the eligible pools in SELECTION_ORDER. Pure: the ADD and the pre-produce guess decide alike.
import { requirementCount, selectorMisses, type LabelSelector, type Labels } from './label-selector';
import { DnsLabelSchema } from './names';

/** The annotation (pod or namespace) naming the pools a pod's addresses may come from, in order. */
export const POOLS_ANNOTATION = 'netlease.io/pools';

/** A refusal's stable reason code (issue 29 item 5; cni/refusals lists it). */
export const RefusalCode = {
  /** No pool is eligible for the pod (none matches, or none the annotation names). */
  noPoolForPod: 'no-pool-for-pod',
  /** The annotation is not a list of pools the control plane serves. */
  invalidPoolAnnotation: 'invalid-pool-annotation',
} as const;
export type RefusalCode = (typeof RefusalCode)[keyof typeof RefusalCode];

/** What selection reads of a pool. */
export interface PoolSelectors {
  name: string;
  namespaceSelector?: LabelSelector;
  nodeSelector?: LabelSelector;
}

/** A Kubernetes object as selection reads it; `labels` undefined: not known (the agent reads no API). */
export interface LabeledObject {
  name: string;
  labels?: Labels;
  annotations?: Labels;
}

export interface SelectionInput {
  /** The pools the control plane serves; empty: not known (the network config's pool is taken). */
  pools: PoolSelectors[];
  /** The pod: its namespace is the namespace object's name. */
  pod: { namespace: string; name: string; annotations?: Labels; statefulSet?: string };
  namespace: LabeledObject;
  node: LabeledObject;
  /** The network config's `pool`, when it names one. */
  configPool?: string;
}

/** What named the pool: an annotation, the network config, or the selectors alone. */
export type SelectedBy = 'pod-annotation' | 'namespace-annotation' | 'network-config' | 'selectors';

export type Selection = { pool: string; by: SelectedBy } | { refused: RefusalCode; message: string };

/** The pool of a network config that names none when no pool is known (before selection). */
export const DEFAULT_POOL = 'default';

/**
 * The order among eligible pools when nothing names one: more selector requirements first (the
 * most specific pool: a region's before the catch-all), then the pool named `default` (what a
 * network config without `pool` meant before selection), then by name.
 */
export function selectionOrder(a: PoolSelectors, b: PoolSelectors): number {
  const specificity = (p: PoolSelectors) =>
    requirementCount(p.namespaceSelector) + requirementCount(p.nodeSelector);
  const byDefault = Number(a.name !== DEFAULT_POOL) - Number(b.name !== DEFAULT_POOL);
  return specificity(b) - specificity(a) || byDefault || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/** Why the pool is not eligible for the pod, naming each selector it fails; undefined: eligible. */
export function ineligibility(pool: PoolSelectors, input: SelectionInput): string | undefined {
  const misses = [
    selectorText(pool.nodeSelector, 'nodeSelector', input.node, `node ${input.node.name}`),
    selectorText(
      pool.namespaceSelector,
      'namespaceSelector',
      input.namespace,
      `namespace ${input.namespace.name}`,
    ),
  ].filter((m): m is string => m !== undefined);
  return misses.length ? `pool ${pool.name}: ${misses.join('; ')}` : undefined;
}

function selectorText(
  selector: LabelSelector | undefined,
  field: string,
  object: LabeledObject,
  what: string,
) {
  if (requirementCount(selector) === 0) return undefined;
  if (!object.labels) return `its ${field} cannot be judged: the labels of ${what} are not read`;
  const misses = selectorMisses(selector, object.labels);
  return misses.length ? `${what} does not match its ${field}: ${misses.join(', ')}` : undefined;
}

/** The annotation that names the pod's pools, and where it is: the pod's wins over its namespace's. */
function namingAnnotation(input: SelectionInput) {
  const onPod = input.pod.annotations?.[POOLS_ANNOTATION];
  if (onPod !== undefined)
    return {
      value: onPod,
      by: 'pod-annotation' as const,
      where: `pod ${input.pod.namespace}/${input.pod.name}`,
    };
  const onNamespace = input.namespace.annotations?.[POOLS_ANNOTATION];
  if (onNamespace !== undefined)
    return {
      value: onNamespace,
      by: 'namespace-annotation' as const,
      where: `namespace ${input.namespace.name}`,
    };
  return undefined;
}

/** The message says why; the CNI error puts the code first (cni/refusals). */
const refuse = (refused: RefusalCode, message: string): Selection => ({ refused, message });

/** The pool names of an annotation, or why it is not a list of served pools. */
function namedPools(value: string, known: PoolSelectors[]): string[] | string {
  const names = value.split(',').map((n) => n.trim());
  const invalid = names.find((n) => !DnsLabelSchema.safeParse(n).success);
  if (invalid !== undefined)
    return `${JSON.stringify(invalid)} is not a pool name (a DNS label; pools comma-separated)`;
  const unknown = names.filter((n) => !known.some((p) => p.name === n));
  const served = known.map((p) => p.name).join(', ') || 'none';
  if (unknown.length)
    return `names ${unknown.map((n) => `"${n}"`).join(', ')}, which the control plane does not serve (it serves ${served})`;
  return names;
}

/** The first eligible pool the annotation names, in its order; never one it does not name. */
function byAnnotation(
  input: SelectionInput,
  named: NonNullable<ReturnType<typeof namingAnnotation>>,
): Selection {
  const names = namedPools(named.value, input.pools);
  if (typeof names === 'string')
    return refuse(
      RefusalCode.invalidPoolAnnotation,
      `${named.where}'s annotation ${POOLS_ANNOTATION}: ${names}`,
    );
  const reasons: string[] = [];
  for (const name of names) {
    const why = ineligibility(input.pools.find((p) => p.name === name) ?? { name }, input);
    if (!why) return { pool: name, by: named.by };
    reasons.push(why);
  }
  const whose = named.by === 'pod-annotation' ? 'its' : `${named.where}'s`;
  return refuse(
    RefusalCode.noPoolForPod,
    `${podText(input)}: ${whose} annotation ${POOLS_ANNOTATION} names no pool for it: ${reasons.join('; ')}`,
  );
}

const podText = (input: SelectionInput) =>
  `pod ${input.pod.namespace}/${input.pod.name} on node ${input.node.name}`;

/** The pool a pod interface's addresses come from, or why there is none (module comment). */
export function selectPool(input: SelectionInput): Selection {
  const named = namingAnnotation(input);
  if (named) return byAnnotation(input, named);
  if (input.configPool !== undefined) {
    const pool = input.pools.find((p) => p.name === input.configPool);
    const why = pool && ineligibility(pool, input);
    if (why)
      return refuse(
        RefusalCode.noPoolForPod,
        `${podText(input)}: the network config's pool is not for it: ${why}`,
      );
    return { pool: input.configPool, by: 'network-config' };
  }
  if (input.pools.length === 0) return { pool: DEFAULT_POOL, by: 'network-config' };
  const eligible = input.pools.filter((p) => !ineligibility(p, input)).sort(selectionOrder);
  const first = eligible[0];
  if (first) return { pool: first.name, by: 'selectors' };
  const reasons = input.pools.map((p) => ineligibility(p, input)).join('; ');
  return refuse(RefusalCode.noPoolForPod, `${podText(input)}: no pool's selectors match: ${reasons}`);
}
