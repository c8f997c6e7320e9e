// Keeps one Kubernetes watch open, restarting it with bounded backoff; events are handled one
// at a time in arrival order. Watches are hints: anything missed is caught by the reconciler.
import { kubeApiError, type KubeClients } from './kube';

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
  let retry: NodeJS.Timeout | undefined;
  let chain: Promise<unknown> = Promise.resolve();
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
        { allowWatchBookmarks: true, ...query },
        (type: string, object: unknown) => {
          backoffMs = 500;
          chain = chain.then(() => handle(type, object)).catch(report);
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
