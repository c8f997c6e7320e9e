// Keeps a worker process running for `npm start`: a crash is restarted after a backoff (1 s,
// doubling to 30 s), at most MAX_RESTARTS times in RESTART_WINDOW_MS, so a worker that cannot
// start gives up instead of looping; the Temporal server and the Kubernetes API keep running.
import type { Tracked } from './processes';

const MAX_RESTARTS = 5;
const RESTART_WINDOW_MS = 10 * 60_000;

export interface Supervised {
  readonly name: string;
  /** The process running now. */
  current(): Tracked;
  /** No more restarts; the caller stops `current()`. */
  stop(): void;
}

export function supervise(
  name: string,
  start: () => Tracked,
  events: { restarted(child: Tracked): void; gaveUp(reason: string): void },
): Supervised {
  let child = start();
  let stopped = false;
  let backoffMs = 1000;
  const restarts: number[] = [];
  const watch = (tracked: Tracked) => {
    void tracked.exited.then((code) => {
      if (stopped) return;
      const now = Date.now();
      restarts.push(now);
      while ((restarts[0] ?? now) < now - RESTART_WINDOW_MS) restarts.shift();
      if (restarts.length > MAX_RESTARTS) {
        events.gaveUp(`${name} (pid ${tracked.pid}) exited (${code}) ${restarts.length} times in 10 minutes`);
        return;
      }
      console.log(
        `netlease: ${name} (pid ${tracked.pid}) exited (${code}); restarting in ${backoffMs / 1000} s`,
      );
      setTimeout(() => {
        if (stopped) return;
        child = start();
        events.restarted(child);
        watch(child);
      }, backoffMs);
      backoffMs = Math.min(backoffMs * 2, 30_000);
    });
  };
  watch(child);
  return {
    name,
    current: () => child,
    stop() {
      stopped = true;
    },
  };
}
