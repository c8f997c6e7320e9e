// A pool as a Kubernetes object (NetleasePool, netlease.io/v1alpha1, cluster-scoped): its spec is
// a PoolSpec named by the object, its status the pool's use per family and conditions an operator
// alerts on. The API server's schema (deploy/01-netleasepool-crd.yaml) refuses what CEL can judge;
// PoolSpecSchema judges the rest, and the pool workflow whether a change is safe while blocks are
// handed out (domain/pool-change).
import { z } from 'zod';
import type { Family } from './cidr';
import { PoolSpecSchema, type PoolSpec } from './pool-spec';
import { inUse, type FamilyUse } from './pool-use';
import { describeIssues } from './text-schemas';

export const POOL_GROUP = 'netlease.io';
export const POOL_VERSION = 'v1alpha1';
export const POOL_PLURAL = 'netleasepools';
export const POOL_KIND = 'NetleasePool';
export const POOLS_PATH = `/apis/${POOL_GROUP}/${POOL_VERSION}/${POOL_PLURAL}`;

/** Share of a family's capacity in use from which the pool is NearlyExhausted, and Exhausted. */
export const NEARLY_EXHAUSTED = 0.8;
export const EXHAUSTED = 0.95;

/** metav1.Condition, as the status subresource stores it. */
export const ConditionSchema = z.object({
  type: z.string(),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string(),
  message: z.string(),
  lastTransitionTime: z.string(),
  observedGeneration: z.number().int().optional(),
});
export type Condition = z.infer<typeof ConditionSchema>;

export const PoolObjectSchema = z.looseObject({
  metadata: z.looseObject({
    name: z.string(),
    uid: z.string().optional(),
    generation: z.number().int().default(0),
    deletionTimestamp: z.string().optional(),
  }),
  spec: z.unknown(),
  status: z.looseObject({ conditions: z.array(ConditionSchema).catch([]).default([]) }).optional(),
});
export type PoolObject = z.infer<typeof PoolObjectSchema>;
/** A NetleasePool's identity: all a deletion needs (one a watch's relist inferred carries no spec). */
export const PoolIdentitySchema = PoolObjectSchema.pick({ metadata: true });

/** The object's spec as a PoolSpec, or why it is not one (each problem naming its `spec.` field). */
export function poolSpecOf(object: PoolObject): { spec: PoolSpec } | { invalid: string } {
  const spec = typeof object.spec === 'object' && object.spec !== null ? object.spec : {};
  const parsed = PoolSpecSchema.safeParse({ ...spec, name: object.metadata.name });
  if (parsed.success) return { spec: parsed.data };
  const named = new z.ZodError(
    parsed.error.issues.map((issue) => ({
      ...issue,
      path: issue.path[0] === 'name' ? ['metadata', ...issue.path] : ['spec', ...issue.path],
    })),
  );
  return { invalid: describeIssues(named) };
}

/** Where the object's spec stands with the pool workflow. */
export type Applied = { state: 'applied' } | { state: 'invalid' | 'refused' | 'pending'; message: string };

export interface FamilyStatus {
  capacity: number;
  allocated: number;
  reserved: number;
  cooldown: number;
  leaked: number;
  /** `allocated/capacity`, for `kubectl get`. */
  usage: string;
}

export interface PoolObjectStatus {
  observedGeneration: number;
  /** When the use below was read (absent: not read yet). */
  sampledAt?: string;
  ipv4?: FamilyStatus;
  ipv6?: FamilyStatus;
  conditions: Condition[];
}

const READY_REASON = {
  applied: 'Applied',
  invalid: 'InvalidSpec',
  refused: 'ChangeRefused',
  pending: 'Pending',
};

function readyCondition(applied: Applied, generation: number) {
  if (applied.state === 'applied')
    return { status: 'True' as const, message: `the pool serves generation ${generation} of this spec` };
  return { status: 'False' as const, message: applied.message };
}

const percent = (share: number) => `${Math.floor(share * 100)} %`;
const familyLine = (u: FamilyUse) =>
  `ipv${u.family}: ${u.allocated + u.cooldown} of ${u.capacity} in use (${percent(inUse(u))})`;

/** NearlyExhausted or Exhausted: True when a family reaches `threshold`, naming it. */
function useCondition(use: FamilyUse[] | undefined, threshold: number) {
  if (!use) return { status: 'Unknown' as const, reason: 'UseUnknown', message: 'the use is not read yet' };
  const over = use.filter((u) => inUse(u) >= threshold);
  const message = (over.length ? over : use).map(familyLine).join('; ');
  if (over.length) return { status: 'True' as const, reason: 'AddressesInUse', message };
  return {
    status: 'False' as const,
    reason: 'BelowThreshold',
    message: `${message}; below ${percent(threshold)}`,
  };
}

/**
 * The object's conditions: `Ready` (the pool serves this generation of the spec), `NearlyExhausted`
 * (a family 80 % in use) and `Exhausted` (95 %). A condition keeps its lastTransitionTime while its
 * status stays.
 */
export function poolConditions(
  applied: Applied,
  use: FamilyUse[] | undefined,
  generation: number,
  previous: Condition[],
  now: string,
): Condition[] {
  const fresh = [
    { type: 'Ready', reason: READY_REASON[applied.state], ...readyCondition(applied, generation) },
    { type: 'NearlyExhausted', ...useCondition(use, NEARLY_EXHAUSTED) },
    { type: 'Exhausted', ...useCondition(use, EXHAUSTED) },
  ];
  return fresh.map((c) => {
    const before = previous.find((p) => p.type === c.type);
    const since = before?.status === c.status ? before.lastTransitionTime : now;
    return { ...c, lastTransitionTime: since, observedGeneration: generation };
  });
}

/** The status subresource's content: the use per family when read, and the conditions. */
export function poolObjectStatus(
  object: PoolObject,
  applied: Applied,
  use: FamilyUse[] | undefined,
  now: Date,
): PoolObjectStatus {
  const at = now.toISOString().replace(/\.\d+Z$/, 'Z'); // metav1.Time: seconds
  const { generation } = object.metadata;
  const previous = object.status?.conditions ?? [];
  const family = (f: Family): FamilyStatus | undefined => {
    const u = use?.find((x) => x.family === f);
    if (!u) return undefined;
    const { capacity, allocated, reserved, cooldown, leaked } = u;
    return { capacity, allocated, reserved, cooldown, leaked, usage: `${allocated}/${capacity}` };
  };
  return {
    observedGeneration: generation,
    ...(use ? { sampledAt: at, ipv4: family(4), ipv6: family(6) } : {}),
    conditions: poolConditions(applied, use, generation, previous, at),
  };
}

/** A pool's use crossing a threshold: the condition raised, and the Event's reason for it. */
const CROSSING_REASONS: Record<string, string> = {
  NearlyExhausted: 'PoolNearlyExhausted',
  Exhausted: 'PoolExhausted',
};

/**
 * The use conditions this status turns True (80 % or 95 % crossed since the status before), each
 * with the reason of its Event: raised once per crossing, not on every status write.
 */
export function useCrossings(
  previous: Condition[],
  next: Condition[],
): Array<{ reason: string; message: string }> {
  return next
    .filter((c) => c.type in CROSSING_REASONS && c.status === 'True')
    .filter((c) => previous.find((p) => p.type === c.type)?.status !== 'True')
    .map((c) => ({ reason: CROSSING_REASONS[c.type] ?? c.type, message: `${c.type}: ${c.message}` }));
}

/**
 * The spec the object's pool workflow serves, as far as the object tells: its spec when the
 * control worker's Ready condition says it applied this generation; undefined otherwise (not
 * applied yet, refused — the workflow keeps its older spec, which the object does not hold — or
 * invalid).
 */
export function appliedSpecOf(object: PoolObject): PoolSpec | undefined {
  const ready = object.status?.conditions.find((c) => c.type === 'Ready');
  const applied = ready?.status === 'True' && ready.observedGeneration === object.metadata.generation;
  if (!applied || object.metadata.deletionTimestamp) return undefined;
  const parsed = poolSpecOf(object);
  return 'spec' in parsed ? parsed.spec : undefined;
}
