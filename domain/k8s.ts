// The Kubernetes objects netlease reads, as zod schemas (only the fields we use), parsed the way
// @kubernetes/client-node returns them, and the one rule every reader applies: an object older
// than one already seen is ignored (seed 002).
import { z } from 'zod';

/**
 * A timestamp as the client returns it: a Date from typed API calls, an RFC 3339 string from a
 * raw watch event. Kept as the string either way.
 */
const KubeTime = z
  .union([z.date(), z.string()])
  .transform((t) => (typeof t === 'string' ? t : t.toISOString()));

const Metadata = z.object({
  name: z.string(),
  namespace: z.string().optional(),
  uid: z.string(),
  resourceVersion: z.string().optional(),
  /** Set while the object is Terminating (grace period, finalizers): it still exists. */
  deletionTimestamp: KubeTime.optional().nullable(),
});

export const PodSchema = z.object({
  metadata: Metadata,
  spec: z
    .object({ nodeName: z.string().optional().nullable(), hostNetwork: z.boolean().optional().nullable() })
    .optional(),
  status: z.object({ phase: z.string().optional().nullable() }).optional(),
});
export type Pod = z.infer<typeof PodSchema>;

export const NodeSchema = z.object({ metadata: Metadata });
export type KubeNode = z.infer<typeof NodeSchema>;

/** What we keep of a pod: identity, node, phase. Compact enough to pass through history. */
export interface PodFact {
  uid: string;
  namespace: string;
  name: string;
  nodeName: string;
  phase: string;
  resourceVersion: string;
  /** Being deleted (grace period or finalizers), but still there: its sandbox may still run. */
  terminating: boolean;
  /** Uses the node's network: the runtime never calls CNI for it. */
  hostNetwork: boolean;
}

export function podFact(pod: Pod): PodFact {
  return {
    uid: pod.metadata.uid,
    namespace: pod.metadata.namespace ?? '',
    name: pod.metadata.name,
    nodeName: pod.spec?.nodeName ?? '',
    phase: pod.status?.phase ?? 'Pending',
    resourceVersion: pod.metadata.resourceVersion ?? '',
    terminating: Boolean(pod.metadata.deletionTimestamp),
    hostNetwork: pod.spec?.hostNetwork === true,
  };
}

export const isTerminal = (phase: string): boolean => phase === 'Succeeded' || phase === 'Failed';

/**
 * resourceVersions are etcd revisions: compare numerically when both parse. Kubernetes calls them
 * opaque, so anything else compares as "unknown" (0) and is never treated as older.
 */
export function compareResourceVersions(a: string, b: string): number {
  if (!/^[0-9]+$/.test(a) || !/^[0-9]+$/.test(b)) return 0;
  const [x, y] = [BigInt(a), BigInt(b)];
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The newest resourceVersion seen per object UID; `admit` says whether an object is not stale. */
export class NewestSeen {
  private readonly seen = new Map<string, string>();

  constructor(private readonly capacity = 200_000) {}

  admit(uid: string, resourceVersion: string | undefined): boolean {
    if (!resourceVersion) return true;
    const previous = this.seen.get(uid);
    if (previous !== undefined && compareResourceVersions(resourceVersion, previous) < 0) return false;
    this.seen.delete(uid);
    this.seen.set(uid, resourceVersion);
    if (this.seen.size > this.capacity) {
      const oldest = this.seen.keys().next();
      if (!oldest.done) this.seen.delete(oldest.value);
    }
    return true;
  }

  /** Whether `resourceVersion` is exactly the newest seen of `uid` (an unversioned object never is). */
  holds(uid: string, resourceVersion: string | undefined): boolean {
    return Boolean(resourceVersion) && this.seen.get(uid) === resourceVersion;
  }

  forget(uid: string): void {
    this.seen.delete(uid);
  }
}
