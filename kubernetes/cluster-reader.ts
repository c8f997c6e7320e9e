// Every read that can release, hand out or destroy state goes through here (seeds 001, 002):
//   - quorum reads only: no resourceVersion is ever sent, so etcd answers, not a watch cache;
//   - lists are paginated with limit/continue;
//   - identity is the UID, never the name or an IP in status;
//   - an object older than one already seen (lower resourceVersion, same UID) is ignored.
import { NewestSeen, NodeSchema, PodSchema, podFact, type KubeNode, type PodFact } from '../domain/k8s';
import { isNotFound, kubeCall, type CoreApi } from './kube';

const PAGE = 500;

export class ClusterReader {
  constructor(
    private readonly core: CoreApi,
    readonly newest = new NewestSeen(),
  ) {}

  /** The pod of this name now (a quorum GET; it may have another UID), or undefined. */
  async readPod(namespace: string, name: string): Promise<PodFact | undefined> {
    try {
      const read = await kubeCall(() => this.core.readNamespacedPod({ name, namespace }));
      const pod = podFact(PodSchema.parse(read));
      this.newest.admit(pod.uid, pod.resourceVersion);
      return pod;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** The node's current UID, or undefined when no node of that name exists. */
  async nodeUid(name: string): Promise<string | undefined> {
    try {
      const node = NodeSchema.parse(await kubeCall(() => this.core.readNode({ name })));
      this.newest.admit(node.metadata.uid, node.metadata.resourceVersion);
      return node.metadata.uid;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** All pods, page by page (quorum); `onPage` lets a long list heartbeat. */
  listPods(onPage: (count: number) => void = () => undefined): Promise<PodFact[]> {
    return paginate(
      (token) => this.core.listPodForAllNamespaces({ limit: PAGE, _continue: token }),
      (item) => podFact(PodSchema.parse(item)),
      onPage,
    );
  }

  /** The pods bound to one node, page by page (quorum): what its compensation judges leases by. */
  listPodsOnNode(nodeName: string): Promise<PodFact[]> {
    const fieldSelector = `spec.nodeName=${nodeName}`;
    return paginate(
      (token) => this.core.listPodForAllNamespaces({ fieldSelector, limit: PAGE, _continue: token }),
      (item) => podFact(PodSchema.parse(item)),
      () => undefined,
    );
  }

  listNodes(onPage: (count: number) => void = () => undefined): Promise<KubeNode[]> {
    return paginate(
      (token) => this.core.listNode({ limit: PAGE, _continue: token }),
      (item) => NodeSchema.parse(item),
      onPage,
    );
  }
}

/** Follows `continue` tokens until the list is complete; never sends a resourceVersion. */
async function paginate<T>(
  fetchPage: (token: string | undefined) => Promise<{ items: unknown[]; metadata?: { _continue?: string } }>,
  parse: (item: unknown) => T,
  onPage: (count: number) => void,
): Promise<T[]> {
  const all: T[] = [];
  let token: string | undefined;
  do {
    const page = await kubeCall(() => fetchPage(token));
    for (const item of page.items) all.push(parse(item));
    token = page.metadata?._continue || undefined;
    onPage(all.length);
  } while (token);
  return all;
}
