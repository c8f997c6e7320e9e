// Keeps one Kubernetes watch open, restarting it with bounded backoff. Each object's events are
// handled in arrival order, different objects' side by side (ObjectQueue). Watches are hints:
// anything missed is caught by the reconciler.
import { kubeApiError, type KubeClients } from './kube';
import { ObjectQueue } from './object-queue';

export interface WatchLoop {
  stop(): void;
}

export interface WatchOptions {
  /** Query parameters of the watch (a field selector). */
  query?: Record<string, string>;
  /** Events handled at once (different objects); 1: strictly one at a time. */
  concurrency?: number;
}

/** Events of one object share a key: its namespace and name (a reused name keeps its order). */
function objectKey(object: unknown): string {
  const meta = (object as { metadata?: { namespace?: unknown; name?: unknown } } | null)?.metadata;
  return `${String(meta?.namespace ?? '')}/${String(meta?.name ?? '')}`;
}

export function watchForever(
  clients: KubeClients,
  path: string,
  handle: (type: string, object: unknown) => Promise<unknown>,
  onError: (err: unknown) => void,
  options: WatchOptions = {},
): WatchLoop {
  let stopped = false;
  let abort: AbortController | undefined;
  let retry: NodeJS.Timeout | undefined;
  const events = new ObjectQueue(options.concurrency ?? 1);
  let backoffMs = 500;
  const watch = new clients.kube.Watch(clients.config);
  // After stop(), what fails is our own abort or an event already in hand: not worth a warning.
  const report = (err: unknown) => {
    if (!stopped) onError(kubeApiError(err));
  };
  const open = async (): Promise<void> => {
    if (stopped) return;
    try {
      abort = await watch.watch(
        path,
        { allowWatchBookmarks: true, ...options.query },
        (type: string, object: unknown) => {
          backoffMs = 500;
          events.push(objectKey(object), () => handle(type, object), report);
        },
        (err: unknown) => {
          if (err) report(err);
          reopen();
        },
      );
      if (stopped) abort.abort(); // stopped while it was opening
    } catch (err) {
      report(err);
      reopen();
    }
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
      abort?.abort();
    },
  };
}
