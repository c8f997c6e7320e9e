// Keeps one Kubernetes watch open, reopening it with bounded backoff. Events are keyed by object
// and coalesce (ObjectQueue): the handler gets an object's latest state, a deletion is never lost,
// one handling per object at a time, `concurrency` objects side by side. Watches are hints:
// anything missed is caught by the reconciler.
//
// A connection with no event and no bookmark for `watchSilenceSeconds` is closed and reopened. A
// reopen lists every object again (no resourceVersion is sent: the first events are a quorum
// snapshot); an object whose state (resourceVersion) is the one last handled is dropped there, so
// a re-list costs one event per unchanged object and nothing more.
import { NewestSeen } from '../domain/k8s';
import { kubeApiError, kubeStatusError, type KubeClients } from './kube';
import { ObjectQueue } from './object-queue';
import { WatchConnection } from './watch-connection';

export interface WatchLoop {
  stop(): void;
  /** Objects with a state waiting or in hand: one entry each, however many events came. */
  readonly pending: number;
  readonly stats: Readonly<WatchStats>;
}

export interface WatchStats {
  /** Connections opened. */
  opened: number;
  /** Object events received (bookmarks and errors not counted). */
  events: number;
  /** Of them, deletions. */
  deleted: number;
  /** Events dropped because their object's state was the one last handled (a re-list). */
  unchanged: number;
}

export interface WatchOptions {
  /** Query parameters of the watch (a field selector). */
  query?: Record<string, string>;
  /** Objects handled at once; 1: strictly one at a time. */
  concurrency?: number;
}

/** An object's latest event: what its handling gets (DELETED once a deletion was seen). */
interface Latest {
  type: string;
  object: unknown;
  resourceVersion: string | undefined;
}

interface Meta {
  uid?: unknown;
  namespace?: unknown;
  name?: unknown;
  resourceVersion?: unknown;
}

const metaOf = (object: unknown): Meta => (object as { metadata?: Meta } | null)?.metadata ?? {};

/**
 * An object's key is its UID: a name reused by a new object (a StatefulSet's pod, a Node
 * registered again) is another object, whose handling neither waits for nor absorbs the old one's
 * deletion. netlease's state is per UID too (lease ids, NewestSeen).
 */
function objectKey(meta: Meta): string {
  if (typeof meta.uid === 'string' && meta.uid) return meta.uid;
  return `${String(meta.namespace ?? '')}/${String(meta.name ?? '')}`;
}

export function watchForever(
  clients: KubeClients,
  path: string,
  handle: (type: string, object: unknown) => Promise<unknown>,
  onError: (err: unknown) => void,
  options: WatchOptions = {},
): WatchLoop {
  let stopped = false;
  let connection: WatchConnection | undefined;
  let retry: NodeJS.Timeout | undefined;
  let backoffMs = 500;
  const stats: WatchStats = { opened: 0, events: 0, deleted: 0, unchanged: 0 };
  const silenceS = clients.timeouts.watchSilenceSeconds;
  // After stop(), what fails is our own abort or an event already in hand: not worth a warning.
  const report = (err: unknown) => {
    if (!stopped) onError(kubeApiError(err));
  };
  const handled = new NewestSeen(); // per key, the resourceVersion last handled
  const queue = new ObjectQueue<Latest>({
    concurrency: options.concurrency ?? 1,
    // A UID once deleted does not come back: nothing after its deletion replaces it.
    merge: (waiting, next) => (waiting.type === 'DELETED' ? waiting : next),
    handle: async (key, latest) => {
      try {
        await handle(latest.type, latest.object);
      } finally {
        handled.forget(key); // failed: a re-list handles it again; deleted: it is gone
      }
      if (latest.type !== 'DELETED') handled.admit(key, latest.resourceVersion);
    },
    onError: report,
  });

  const onEvent = (type: string, object: unknown) => {
    backoffMs = 500;
    if (type === 'BOOKMARK') return;
    if (type === 'ERROR') return report(kubeStatusError(object)); // the server ends the watch next
    stats.events++;
    if (type === 'DELETED') stats.deleted++;
    const meta = metaOf(object);
    const key = objectKey(meta);
    const resourceVersion = typeof meta.resourceVersion === 'string' ? meta.resourceVersion : undefined;
    if (type !== 'DELETED' && handled.holds(key, resourceVersion)) {
      stats.unchanged++;
      return;
    }
    queue.add(key, { type, object, resourceVersion });
  };

  const open = async (): Promise<void> => {
    if (stopped) return;
    const mine = new WatchConnection(clients, silenceS * 1000, () =>
      end(new Error(`watch ${path}: no event or bookmark in ${silenceS} s`)),
    );
    /** This connection's end (an error, or null: closed by the server): reopen, once. */
    const end = (err: unknown) => {
      if (connection !== mine || stopped) return;
      mine.close();
      connection = undefined;
      if (err) report(err);
      reopen();
    };
    connection = mine;
    stats.opened++;
    const query = { allowWatchBookmarks: true, ...options.query };
    await mine.open(path, query, onEvent, end).catch(end);
  };
  const reopen = () => {
    if (stopped) return;
    backoffMs = Math.min(backoffMs * 2, 30000);
    retry = setTimeout(() => void open(), backoffMs);
  };
  void open();
  return {
    stop() {
      stopped = true;
      clearTimeout(retry);
      connection?.close();
      queue.clear(); // what waits is no longer ours to do (another holder, or a new reconcile)
    },
    get pending() {
      return queue.size;
    },
    stats,
  };
}
