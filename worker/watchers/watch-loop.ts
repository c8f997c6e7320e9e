// Keeps one Kubernetes watch open, restarting it with bounded backoff; events are handled one
// at a time in arrival order. Watches are hints: anything missed is caught by the reconciler.
import type { KubeClients } from '../../kubernetes/kube';

export interface WatchLoop {
  stop(): void;
}

export function watchForever(
  clients: KubeClients,
  path: string,
  handle: (type: string, object: unknown) => Promise<unknown>,
  onError: (err: unknown) => void,
  query: Record<string, string> = {},
): WatchLoop {
  let stopped = false;
  let abort: AbortController | undefined;
  let chain: Promise<unknown> = Promise.resolve();
  let backoffMs = 500;
  const watch = new clients.kube.Watch(clients.config);
  const open = async (): Promise<void> => {
    if (stopped) return;
    try {
      abort = await watch.watch(
        path,
        { allowWatchBookmarks: true, ...query },
        (type: string, object: unknown) => {
          backoffMs = 500;
          chain = chain.then(() => handle(type, object)).catch(onError);
        },
        (err: unknown) => {
          if (err && !stopped) onError(err); // after stop(): our own abort, not a failure
          reopen();
        },
      );
    } catch (err) {
      onError(err);
      reopen();
    }
  };
  const reopen = () => {
    if (stopped) return;
    backoffMs = Math.min(backoffMs * 2, 30000);
    setTimeout(() => void open(), backoffMs);
  };
  void open();
  return {
    stop() {
      stopped = true;
      abort?.abort();
    },
  };
}
