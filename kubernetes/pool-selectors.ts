// The served pools' selectors as the node agent reads them from NetleasePool objects
// (kubernetes.poolObjects): a list (a 404: the CRD is not installed) then a watch, so an ADD reads
// no API and asks Temporal nothing, and a selector changed on an object is seen within the watch's
// latency. Served is what the pool workflow serves: an object's spec once its Ready condition says
// this generation was applied, else the spec this watch last saw applied (a refused change leaves
// the workflow on its older spec, which the object does not hold). An object for which neither is
// known (not applied yet, refused or invalid before this agent saw it applied, its Ready behind
// its generation) is `unread`: the caller asks its pool workflow. Until the watch has brought every
// object the list named, or with no object at all, `served` says undefined: the caller asks the
// pool catalogue (temporal/pool-catalogue), as without objects.
import {
  appliedSpecOf,
  POOL_GROUP,
  POOL_PLURAL,
  POOL_VERSION,
  PoolIdentitySchema,
  PoolObjectSchema,
} from '../domain/pool-object';
import type { PoolSelectors } from '../domain/pool-selection';
import { isNotFound, kubeCall, type KubeClients } from './kube';
import { watchForever, type WatchLoop } from './watch-loop';

/** Where the objects are; another resource only to see an API that does not serve it (a test). */
export interface PoolResource {
  group: string;
  version: string;
  plural: string;
}

const POOLS = { group: POOL_GROUP, version: POOL_VERSION, plural: POOL_PLURAL };
const LIST_RETRY_MS = 5_000;

interface Seen {
  name: string;
  /** The selectors of the spec last seen applied (undefined: none seen yet). */
  served?: PoolSelectors;
}

const selectorsOf = (name: string, spec: Omit<PoolSelectors, 'name'>): PoolSelectors => ({
  name,
  ...(spec.namespaceSelector ? { namespaceSelector: spec.namespaceSelector } : {}),
  ...(spec.nodeSelector ? { nodeSelector: spec.nodeSelector } : {}),
});

/** The pools as the objects tell them, and the objects whose served spec they do not tell. */
export interface ObjectPools {
  pools: PoolSelectors[];
  unread: string[];
}

export class ServedPoolObjects {
  private state: 'listing' | 'absent' | 'watching' | 'stopped' = 'listing';
  /** The UIDs the list named that the watch has not brought yet. */
  private readonly awaited = new Set<string>();
  private readonly seen = new Map<string, Seen>();
  private watch: WatchLoop | undefined;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly kube: KubeClients,
    private readonly resource: PoolResource = POOLS,
  ) {}

  /** Lists then watches; `onAbsent` hears that the API serves no NetleasePools (the catalogue stays). */
  start(onError: (err: unknown) => void, onAbsent: () => void = () => undefined): this {
    void this.list(onError, onAbsent);
    return this;
  }

  stop(): void {
    this.state = 'stopped';
    clearTimeout(this.retry);
    this.watch?.stop();
  }

  /** The served pools' selectors, sorted by name; undefined: the objects cannot tell (module comment). */
  served(): ObjectPools | undefined {
    if (this.state !== 'watching' || this.awaited.size > 0 || this.seen.size === 0) return undefined;
    const known = [...this.seen.values()];
    return {
      pools: known.flatMap((s) => (s.served ? [s.served] : [])).sort((a, b) => (a.name < b.name ? -1 : 1)),
      unread: known.filter((s) => !s.served).map((s) => s.name),
    };
  }

  private async list(onError: (err: unknown) => void, onAbsent: () => void): Promise<void> {
    const api = this.kube.config.makeApiClient(this.kube.kube.CustomObjectsApi);
    try {
      const listed: unknown = await kubeCall(
        `list ${this.resource.plural}`,
        this.kube.timeouts.callSeconds * 1000,
        (options) => api.listClusterCustomObject(this.resource, options),
      );
      for (const item of (listed as { items?: unknown[] }).items ?? []) {
        const uid = PoolObjectSchema.safeParse(item).data?.metadata.uid;
        if (uid) this.awaited.add(uid);
      }
    } catch (err) {
      if (this.state === 'stopped') return;
      if (isNotFound(err)) return ((this.state = 'absent'), onAbsent());
      onError(err);
      this.retry = setTimeout(() => void this.list(onError, onAbsent), LIST_RETRY_MS);
      return;
    }
    if (this.state === 'stopped') return;
    this.state = 'watching';
    const { group, version, plural } = this.resource;
    const handle = (type: string, raw: unknown) => Promise.resolve(this.keep(type, raw));
    this.watch = watchForever(this.kube, `/apis/${group}/${version}/${plural}`, handle, onError);
  }

  private keep(type: string, raw: unknown): void {
    // A deleted object's workflow serves the leases it has, but no new pod is given its pool. (A
    // deletion a relist inferred carries the object's identity only.)
    if (type === 'DELETED') return this.forget(PoolIdentitySchema.safeParse(raw).data?.metadata);
    const parsed = PoolObjectSchema.safeParse(raw);
    if (!parsed.success) return;
    const object = parsed.data;
    const { name, uid = name } = object.metadata;
    this.awaited.delete(uid);
    const applied = appliedSpecOf(object);
    const before = this.seen.get(uid)?.served;
    this.seen.set(uid, { name, served: applied ? selectorsOf(name, applied) : before });
  }

  private forget(identity: { name: string; uid?: string } | undefined): void {
    if (!identity) return;
    const uid = identity.uid ?? identity.name;
    this.awaited.delete(uid);
    this.seen.delete(uid);
  }
}
