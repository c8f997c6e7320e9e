// The control worker's configuration of its pools (temporal/pools). A pool's refusal (ConfigError:
// the change would move addresses under handed-out blocks) stops the worker. Anything else
// (Temporal away, a pool's workflow task failing, an update not taken in time) must not: the pools
// keep serving on the spec they have, and a worker that exited on it would crash-loop and leave
// every lease without a worker. So it is tried again, with back-off, while the worker runs.
import { ConfigError } from '../../domain/config';
import type { Log } from '../../observability/log';

export interface PoolConfiguration {
  /** 'configured', or 'pending' once the first try failed or outlasted `firstTryMs`; rejects on a refusal. */
  firstTry: Promise<'configured' | 'pending'>;
  /** Resolves once configured or the worker stopped; rejects on a refusal. */
  done: Promise<void>;
}

export interface PoolConfigurationOptions {
  configure: () => Promise<void>;
  /** Whether the worker still runs: the tries stop with it. */
  running: () => boolean;
  log: Log;
  firstTryMs?: number;
  maxBackoffMs?: number;
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function configurePoolsWhileRunning(options: PoolConfigurationOptions): PoolConfiguration {
  const { configure, running, log, firstTryMs = 30_000, maxBackoffMs = 30_000 } = options;
  let failedOnce!: () => void;
  const failed = new Promise<'pending'>((resolve) => (failedOnce = () => resolve('pending')));
  const done = (async () => {
    for (let attempt = 1; running(); attempt++) {
      try {
        return await configure();
      } catch (err) {
        if (err instanceof ConfigError) throw err;
        failedOnce();
        log.warn({ err, attempt }, 'configuring the pools failed; they keep their spec; trying again');
        const until = Date.now() + Math.min(maxBackoffMs, 500 * 2 ** attempt);
        while (running() && Date.now() < until) await pause(Math.min(250, until - Date.now()));
      }
    }
  })();
  let timer: NodeJS.Timeout | undefined;
  const outlasted = new Promise<'pending'>(
    (resolve) => (timer = setTimeout(() => resolve('pending'), firstTryMs)),
  );
  const firstTry = Promise.race([done.then(() => 'configured' as const), failed, outlasted]).finally(() =>
    clearTimeout(timer),
  );
  return { firstTry, done };
}
