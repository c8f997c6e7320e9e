// Starts the pinned Temporal dev server on loopback with netlease's search attributes registered.
import { TemporalConnectionSchema } from '../domain/config';
import { devServerFlags } from '../domain/search-attributes';
import { connectConnection } from '../temporal/connection';
import { programPath } from './programs';
import { startTracked, stopPid, waitFor, type Tracked } from './processes';

export interface DevServerOptions {
  port: number;
  /** Omit for a headless server (tests). */
  uiPort?: number;
  /** SQLite file that keeps state across restarts; omit for in-memory. */
  dbFile?: string;
  /** Where the server's own output goes (default: discarded). */
  logFd?: number;
  /** With DEV_SERVER_TUNING (and SQLITE_FILE_TUNING for a dbFile); default true. */
  tuned?: boolean;
  /** Serve the server's own Prometheus metrics on this port. */
  metricsPort?: number;
  /** More dynamic config on top of the tuning (a test's limit). */
  dynamicConfig?: Record<string, number | boolean>;
}

const dynamicConfig = (values: Record<string, number | boolean>): string[] =>
  Object.entries(values).flatMap(([key, value]) => ['--dynamic-config-value', `${key}=${value}`]);

/** Settings measured with `npm run bench` to shorten a CNI call's Temporal hops (docs/benchmarks.md). */
export const DEV_SERVER_TUNING = dynamicConfig({
  // history.maxInFlightUpdates stays at its default (10), as in production: node operations are
  // batched (test/integration/node-burst.heavy checks that a burst is never refused).
  // produceAddresses runs on the worker that scheduled it, without a trip through matching.
  'system.enableActivityEagerExecution': true,
  // One partition per task queue: a task never waits on a partition nobody is polling.
  'matching.numTaskqueueReadPartitions': 1,
  'matching.numTaskqueueWritePartitions': 1,
  // The dev server has one history shard: its queues may read new tasks far more often than 20/s.
  'history.transferProcessorMaxPollRPS': 1000,
  'history.visibilityProcessorMaxPollRPS': 1000,
});

/** A state file (npm start): write-ahead log, fsync at checkpoints rather than every commit. */
export const SQLITE_FILE_TUNING = [
  '--sqlite-pragma',
  'journal_mode=wal',
  '--sqlite-pragma',
  'synchronous=normal',
];

/** A Temporal server netlease's processes are pointed at: the dev server or the production one. */
export interface TemporalServer {
  address: string;
  /** The pinned `temporal` CLI (not on PATH). */
  cli: string;
  /** The frontend's process. */
  pid: number;
  process: Tracked;
  /** Every process it runs (to stop by PID). */
  pids(): number[];
  stop(): Promise<void>;
}

export interface DevServer extends TemporalServer {
  uiUrl?: string;
}

export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--log-level',
    'warn',
    ...(options.uiPort ? ['--ui-ip', '127.0.0.1', '--ui-port', String(options.uiPort)] : ['--headless']),
    ...(options.dbFile ? ['--db-filename', options.dbFile] : []),
    ...devServerFlags(),
    ...(options.tuned === false ? [] : [...DEV_SERVER_TUNING, ...(options.dbFile ? SQLITE_FILE_TUNING : [])]),
    ...(options.metricsPort ? ['--metrics-port', String(options.metricsPort)] : []),
    ...dynamicConfig(options.dynamicConfig ?? {}),
  ];
  const out = options.logFd ?? 'ignore';
  const tracked = startTracked(programPath('temporal'), args, { stdio: ['ignore', out, out] });
  const address = `127.0.0.1:${options.port}`;
  const server: DevServer = {
    address,
    uiUrl: options.uiPort ? `http://127.0.0.1:${options.uiPort}` : undefined,
    cli: programPath('temporal'),
    pid: tracked.pid,
    process: tracked,
    pids: () => [tracked.pid],
    stop: () => stopPid(tracked.pid),
  };
  await untilHealthy(tracked, address, 60000, 'Temporal dev server');
  return server;
}

/**
 * Waits until the server `tracked` answers its health check; if it exits first or the deadline
 * passes, stops it and throws naming `what`, its exit and `more` (where its log is).
 */
export async function untilHealthy(
  tracked: Tracked,
  address: string,
  timeoutMs: number,
  what: string,
  more = '',
): Promise<void> {
  let exitCode: number | null | undefined;
  void tracked.exited.then((code) => (exitCode = code ?? -1));
  const healthy = await waitFor(() => exitCode !== undefined || isHealthy(address), timeoutMs, 200);
  if (healthy && exitCode === undefined) return;
  await stopPid(tracked.pid);
  throw new Error(`${what} on ${address} did not become healthy (exit ${exitCode ?? 'none'}${more})`);
}

/** The frontend answers its gRPC health check (plaintext, loopback). */
async function isHealthy(address: string): Promise<boolean> {
  try {
    // The dev server this launches is plaintext on loopback: no tls section.
    const settings = TemporalConnectionSchema.parse({ address });
    const connection = await connectConnection(settings, { connectTimeoutMs: 1000 });
    try {
      await connection.healthService.check({});
      return true;
    } finally {
      await connection.close();
    }
  } catch {
    return false;
  }
}
