// What pool selection reads of the cluster for a pod (domain/pool-selection): its annotations, its
// namespace's labels and annotations, its node's labels. The node agent keeps them from three
// watches (its node's pods, the namespaces, its own Node), so an ADD adds no API read in the
// common case. The pods come from the pre-producer's watch when there is one (`keepPod`: one
// watch of the node's pods per agent; it opens once the pool is served), else from a watch of
// its own. An object the watches have not brought yet is read (quorum) at the ADD. As fresh as
// the watches: a label changed a moment before an ADD may not be seen by it. With
// kubernetes.poolObjects the served pools' selectors come from a watch of the NetleasePool
// objects too (./pool-selectors).
import { z } from 'zod';
import type { LabeledObject } from '../domain/pool-selection';
import { isNotFound, kubeCall, type KubeClients } from './kube';
import { ServedPoolObjects, type ObjectPools } from './pool-selectors';
import { watchForever, type WatchLoop } from './watch-loop';

const StringMap = z.record(z.string(), z.string()).nullish();
const ObjectSchema = z.object({
  metadata: z.object({
    name: z.string(),
    uid: z.string().optional(),
    labels: StringMap,
    annotations: StringMap,
    ownerReferences: z
      .array(z.object({ kind: z.string(), name: z.string(), controller: z.boolean().nullish() }))
      .nullish(),
  }),
});
type KubeObject = z.infer<typeof ObjectSchema>;

const labeled = (object: KubeObject): LabeledObject => ({
  name: object.metadata.name,
  labels: object.metadata.labels ?? {},
  annotations: object.metadata.annotations ?? {},
});

/** A pod as an ADD names it: CNI_ARGS and the network config's node. */
export interface PodOnNode {
  namespace: string;
  name: string;
  uid?: string;
  nodeName: string;
}

/** Where pool selection reads a pod's facts (the node agent's SelectionFacts). */
export interface PodFactsSource {
  forPod(pod: PodOnNode): Promise<PodSelectionFacts>;
  /** The served pools' selectors as the NetleasePool objects say; undefined: ask the pool catalogue. */
  servedPools?(): ObjectPools | undefined;
}

/** The pod, its namespace and its node as selection reads them. */
export interface PodSelectionFacts {
  pod: { namespace: string; name: string; annotations: Record<string, string>; statefulSet?: string };
  namespace: LabeledObject;
  node: LabeledObject;
}

/** The StatefulSet whose pod it is (its controller ownerReference), for sticky addresses. */
function controllingStatefulSet(pod: KubeObject | undefined): { statefulSet?: string } {
  const owner = pod?.metadata.ownerReferences?.find((o) => o.controller === true && o.kind === 'StatefulSet');
  return owner ? { statefulSet: owner.name } : {};
}

/** A watch event handler that keeps the objects it parses (a deletion as such). */
const kept =
  (into: (o: KubeObject, deleted: boolean) => void) =>
  (type: string, object: unknown): void => {
    const parsed = ObjectSchema.safeParse(object);
    if (parsed.success) into(parsed.data, type === 'DELETED');
  };

export class SelectionFacts implements PodFactsSource {
  private readonly pods = new Map<string, KubeObject>();
  private readonly namespaces = new Map<string, KubeObject>();
  private node: KubeObject | undefined;
  private readonly watches: WatchLoop[] = [];
  private pools: ServedPoolObjects | undefined;

  constructor(
    private readonly kube: KubeClients,
    private readonly nodeName: string,
  ) {}

  /**
   * Opens the watches; `onError` hears each watch failure (they reopen by themselves). `watchPods`
   * false: the pods come from another watch of the node's pods, through `keepPod`. `poolObjects`:
   * the served pools too, from the NetleasePool objects (`onNoPoolObjects`: the API serves none).
   */
  start(
    onError: (err: unknown) => void,
    { watchPods = true, poolObjects = false, onNoPoolObjects = () => undefined as void } = {},
  ): this {
    if (poolObjects) this.pools = new ServedPoolObjects(this.kube).start(onError, onNoPoolObjects);
    const on = (path: string, handle: (type: string, object: unknown) => void, fieldSelector?: string) =>
      this.watches.push(
        watchForever(
          this.kube,
          path,
          (type, object) => Promise.resolve(handle(type, object)),
          onError,
          fieldSelector ? { query: { fieldSelector } } : {},
        ),
      );
    if (watchPods)
      on('/api/v1/pods', (type, object) => this.keepPod(type, object), `spec.nodeName=${this.nodeName}`);
    on(
      '/api/v1/namespaces',
      kept((o, deleted) => this.put(this.namespaces, o.metadata.name, o, deleted)),
    );
    on(
      '/api/v1/nodes',
      kept((o, deleted) => (this.node = deleted ? undefined : o)),
      `metadata.name=${this.nodeName}`,
    );
    return this;
  }

  /** Keeps a watch event of a pod bound to this node (from this one's pod watch or another's). */
  keepPod(type: string, object: unknown): void {
    kept((o, deleted) => this.put(this.pods, o.metadata.uid ?? o.metadata.name, o, deleted))(type, object);
  }

  stop(): void {
    for (const watch of this.watches) watch.stop();
    this.pools?.stop();
  }

  servedPools(): ObjectPools | undefined {
    return this.pools?.served();
  }

  private put(map: Map<string, KubeObject>, key: string, object: KubeObject, deleted: boolean) {
    if (deleted) map.delete(key);
    else map.set(key, object);
  }

  /**
   * The facts for a pod (by UID where the runtime passes one), read from the watches, else from
   * the API. An object that does not exist reads as one without labels or annotations.
   */
  async forPod(pod: PodOnNode): Promise<PodSelectionFacts> {
    const { namespace, name, uid, nodeName } = pod;
    const cachedPod = uid ? this.pods.get(uid) : undefined;
    const cachedNode = nodeName === this.nodeName ? this.node : undefined;
    const [read, ns, node] = await Promise.all([
      cachedPod ??
        this.read(`pod ${namespace}/${name}`, (o) =>
          this.kube.core.readNamespacedPod({ namespace, name }, o),
        ),
      this.namespaces.get(namespace) ??
        this.read(`namespace ${namespace}`, (o) => this.kube.core.readNamespace({ name: namespace }, o)),
      cachedNode ?? this.read(`node ${nodeName}`, (o) => this.kube.core.readNode({ name: nodeName }, o)),
    ]);
    return {
      pod: {
        namespace,
        name,
        annotations: read?.metadata.annotations ?? {},
        ...controllingStatefulSet(read),
      },
      namespace: ns ? labeled(ns) : { name: namespace, labels: {}, annotations: {} },
      node: node ? labeled(node) : { name: nodeName, labels: {}, annotations: {} },
    };
  }

  private async read(what: string, call: Parameters<typeof kubeCall>[2]): Promise<KubeObject | undefined> {
    try {
      const object = await kubeCall(`reading ${what}`, this.kube.timeouts.callSeconds * 1000, call);
      return ObjectSchema.parse(object);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
