// Keeps one Kubernetes watch open, reopening it with bounded backoff. Events are keyed by object
// and coalesce (ObjectQueue): the handler gets an object's latest state, a deletion is never lost,
// one handling per object at a time, `concurrency` objects side by side. A failed handling is
// tried again after 1 s, 2 s, 4 s … (a minute at most) unless a newer state comes first, as
// client-go's rate-limited requeue. Watches are hints: anything missed is caught by the reconciler.
//
// List, then watch from the list's resourceVersion (client-go's reflector). A reopened watch goes
// on from the last resourceVersion it heard (an event or a bookmark), so a deletion made while it
// was away still comes as an event. When the server no longer has that point (410 Gone: compacted,
// or a restarted apiserver's new watch cache), the loop lists again, and an object it knew that
// the list no longer holds was deleted meanwhile: its handler gets a DELETED carrying the object's
// identity (metadata only), as client-go's DeletedFinalStateUnknown does. A listed object whose
// state (resourceVersion) is the one last handled is dropped: a relist costs nothing more per
// unchanged object. A connection with no event and no bookmark for `watchSilenceSeconds` is closed
// and reopened.
import { NewestSeen } from '../domain/k8s';
import { listCollection } from './collection-list';
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
  /** Object events received, a list's objects counted as ADDED ones (bookmarks and errors not). */
  events: number;
  /** Of them, deletions. */
  deleted: number;
  /** Events dropped because their object's state was the one last handled (a re-list). */
  unchanged: number;
  /** Complete lists made: the first, and one after each 410 Gone. */
  listed: number;
  /** Objects a list no longer held that the loop knew: deleted while it was away. */
  vanished: number;
  /** Failed handlings tried again (after a backoff, with no new event). */
  retried: number;
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
const versionOf = (meta: Meta): string | undefined =>
  typeof meta.resourceVersion === 'string' && meta.resourceVersion ? meta.resourceVersion : undefined;

/** What the loop keeps of an object it knows, to tell its handler it is gone: its metadata's identity. */
const identityOf = (object: unknown): Meta => {
  const { uid, namespace, name } = metaOf(object);
  return { uid, namespace, name };
};

/** A watch's ERROR saying its resourceVersion is gone from the server (compacted, a new cache). */
const isExpired = (err: unknown): boolean => (err as { code?: unknown } | null)?.code === 410;

/** A failed handling is tried again after 1 s, 2 s, 4 s … at most a minute apart. */
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 60_000;

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
  let reopenTimer: NodeJS.Timeout | undefined;
  let backoffMs = 500;
  /** Where the next watch goes on from; undefined: list first. */
  let resumeFrom: string | undefined;
  const stats: WatchStats = {
    opened: 0,
    events: 0,
    deleted: 0,
    unchanged: 0,
    listed: 0,
    vanished: 0,
    retried: 0,
  };
  const silenceS = clients.timeouts.watchSilenceSeconds;
  // After stop(), what fails is our own abort or an event already in hand: not worth a warning.
  const report = (err: unknown) => {
    if (!stopped) onError(kubeApiError(err));
  };
  const handled = new NewestSeen(); // per key, the resourceVersion last handled
  const known = new Map<string, Meta>(); // per key of an object not deleted, its identity
  // Per key whose handling failed, its failures in a row and the timer that tries it again (the
  // Kubernetes or Temporal call it made was refused): a resumed watch brings no event for it.
  const retries = new Map<string, { failures: number; timer?: NodeJS.Timeout }>();
  const queue = new ObjectQueue<Latest>({
    concurrency: options.concurrency ?? 1,
    // A UID once deleted does not come back: nothing after its deletion replaces it.
    merge: (waiting, next) => (waiting.type === 'DELETED' ? waiting : next),
    handle: async (key, latest) => {
      try {
        await handle(latest.type, latest.object);
      } catch (err) {
        retryLater(key, latest);
        throw err;
      } finally {
        handled.forget(key); // failed: tried again, or a relist does; deleted: it is gone
      }
      retries.delete(key);
      if (latest.type !== 'DELETED') handled.admit(key, latest.resourceVersion);
    },
    onError: report,
  });

  const retryLater = (key: string, latest: Latest) => {
    if (stopped) return;
    const failures = (retries.get(key)?.failures ?? 0) + 1;
    const delayMs = Math.min(RETRY_FIRST_MS * 2 ** (failures - 1), RETRY_MAX_MS);
    const timer = setTimeout(() => {
      if (stopped || retries.get(key)?.timer !== timer) return;
      stats.retried++;
      queue.add(key, latest);
    }, delayMs);
    retries.set(key, { failures, timer });
  };

  /** An object's state, from a watch event or a list: queued unless it is the one last handled. */
  const observe = (type: string, object: unknown) => {
    const meta = metaOf(object);
    const key = objectKey(meta);
    const resourceVersion = versionOf(meta);
    if (type === 'DELETED') known.delete(key);
    else known.set(key, identityOf(object));
    const failed = retries.get(key);
    if (failed) clearTimeout(failed.timer); // this state is handled instead of the failed one
    if (failed) delete failed.timer;
    if (type !== 'DELETED' && handled.holds(key, resourceVersion)) {
      stats.unchanged++;
      return;
    }
    queue.add(key, { type, object, resourceVersion });
  };

  const onEvent = (type: string, object: unknown) => {
    backoffMs = 500;
    if (type === 'ERROR') return refused(kubeStatusError(object)); // the server ends the watch next
    resumeFrom = versionOf(metaOf(object)) ?? resumeFrom;
    if (type === 'BOOKMARK') return;
    stats.events++;
    if (type === 'DELETED') stats.deleted++;
    observe(type, object);
  };

  /** A refusal of the watch; a 410 Gone means its resourceVersion is no more: list again. */
  const refused = (err: unknown) => {
    if (isExpired(kubeApiError(err))) resumeFrom = undefined;
    report(err);
  };

  /** Lists every object; those known and no longer listed were deleted meanwhile. */
  const list = async (): Promise<string> => {
    const listed = new Set<string>();
    const query = options.query ?? {};
    const version = await listCollection(clients, path, query, (object) => {
      listed.add(objectKey(metaOf(object)));
      stats.events++;
      observe('ADDED', object);
    });
    stats.listed++;
    for (const [key, identity] of known) {
      if (listed.has(key)) continue;
      stats.vanished++;
      stats.deleted++;
      observe('DELETED', { metadata: identity });
    }
    return version;
  };

  const open = async (): Promise<void> => {
    if (stopped) return;
    let from = resumeFrom;
    try {
      from ??= await list();
    } catch (err) {
      report(err);
      return reopen();
    }
    if (stopped) return;
    resumeFrom = from;
    const mine = new WatchConnection(clients, silenceS * 1000, () =>
      end(new Error(`watch ${path}: no event or bookmark in ${silenceS} s`)),
    );
    /** This connection's end (an error, or null: closed by the server): reopen, once. */
    const end = (err: unknown) => {
      if (connection !== mine || stopped) return;
      mine.close();
      connection = undefined;
      if (err) refused(err);
      reopen();
    };
    connection = mine;
    stats.opened++;
    const query = { allowWatchBookmarks: true, ...options.query, resourceVersion: from };
    await mine.open(path, query, onEvent, end).catch(end);
  };
  const reopen = () => {
    if (stopped) return;
    backoffMs = Math.min(backoffMs * 2, 30000);
    reopenTimer = setTimeout(() => void open(), backoffMs);
  };
  void open();
  return {
    stop() {
      stopped = true;
      clearTimeout(reopenTimer);
      for (const { timer } of retries.values()) clearTimeout(timer);
      connection?.close();
      queue.clear(); // what waits is no longer ours to do (another holder, or a new reconcile)
    },
    get pending() {
      return queue.size;
    },
    stats,
  };
}
