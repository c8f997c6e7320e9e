// Every read that can release, hand out or destroy state goes through here (seeds 001, 002):
//   - quorum reads only: no resourceVersion is ever sent, so etcd answers, not a watch cache;
//   - lists are paginated with limit/continue;
//   - identity is the UID, never the name or an IP in status;
//   - an object older than one already seen (lower resourceVersion, same UID) is ignored;
//   - every call is bounded (`timeouts`): a read or a page not answered in time fails.
import { DEFAULT_KUBE_TIMEOUTS, type KubeTimeouts } from '../domain/config';
import { NewestSeen, NodeSchema, PodSchema, podFact, type KubeNode, type PodFact } from '../domain/k8s';
import { isNotFound, kubeCall, type CoreApi, type KubeCallOptions } from './kube';

const PAGE = 500;

export class ClusterReader {
  constructor(
    private readonly core: CoreApi,
    private readonly timeouts: KubeTimeouts = DEFAULT_KUBE_TIMEOUTS,
    readonly newest = new NewestSeen(),
  ) {}

  /** One object's read, bounded by `callSeconds`. */
  private read<T>(what: string, call: (options: KubeCallOptions) => Promise<T>): Promise<T> {
    return kubeCall(what, this.timeouts.callSeconds * 1000, call);
  }

  /** The pod of this name now (a quorum GET; it may have another UID), or undefined. */
  async readPod(namespace: string, name: string): Promise<PodFact | undefined> {
    try {
      const read = await this.read(`reading pod ${namespace}/${name}`, (options) =>
        this.core.readNamespacedPod({ name, namespace }, options),
      );
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
      const read = await this.read(`reading node ${name}`, (options) =>
        this.core.readNode({ name }, options),
      );
      const node = NodeSchema.parse(read);
      this.newest.admit(node.metadata.uid, node.metadata.resourceVersion);
      return node.metadata.uid;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** All pods, page by page (quorum); `onPage` lets a long list heartbeat. */
  listPods(onPage: (count: number) => void = () => undefined): Promise<PodFact[]> {
    return this.paginate(
      'listing pods',
      (token, options) => this.core.listPodForAllNamespaces({ limit: PAGE, _continue: token }, options),
      (item) => podFact(PodSchema.parse(item)),
      onPage,
    );
  }

  /** The pods bound to one node, page by page (quorum): what its compensation judges leases by. */
  listPodsOnNode(nodeName: string): Promise<PodFact[]> {
    const fieldSelector = `spec.nodeName=${nodeName}`;
    return this.paginate(
      `listing the pods of node ${nodeName}`,
      (token, options) =>
        this.core.listPodForAllNamespaces({ fieldSelector, limit: PAGE, _continue: token }, options),
      (item) => podFact(PodSchema.parse(item)),
      () => undefined,
    );
  }

  listNodes(onPage: (count: number) => void = () => undefined): Promise<KubeNode[]> {
    return this.paginate(
      'listing nodes',
      (token, options) => this.core.listNode({ limit: PAGE, _continue: token }, options),
      (item) => NodeSchema.parse(item),
      onPage,
    );
  }

  /**
   * Follows `continue` tokens until the list is complete; never sends a resourceVersion. Each
   * page is bounded by `listPageSeconds`, not the whole list: a big cluster's list is long.
   */
  private async paginate<T>(
    what: string,
    fetchPage: (token: string | undefined, options: KubeCallOptions) => Promise<Page>,
    parse: (item: unknown) => T,
    onPage: (count: number) => void,
  ): Promise<T[]> {
    const all: T[] = [];
    const pageMs = this.timeouts.listPageSeconds * 1000;
    let token: string | undefined;
    for (let number = 1; number === 1 || token; number++) {
      const page = await kubeCall(`${what}, page ${number}`, pageMs, (options) => fetchPage(token, options));
      for (const item of page.items) all.push(parse(item));
      token = page.metadata?._continue || undefined;
      onPage(all.length);
    }
    return all;
  }
}

interface Page {
  items: unknown[];
  metadata?: { _continue?: string };
}
