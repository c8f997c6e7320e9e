// Visibility that lags on purpose: a psql session holds the visibility table in EXCLUSIVE mode
// inside an open transaction, so the Temporal server's visibility writes wait on the lock while
// reads (ACCESS SHARE) still answer with what was there before. Needs the production Temporal
// (NETLEASE_TEST_POSTGRES, set by global setup); the session is a child process tracked by PID.
import { join } from 'node:path';
import { binDir, SUPERUSER } from '../../tools/postgres';
import { runToEnd, startTracked, stopPid, waitFor, type Tracked } from '../../tools/processes';

const VISIBILITY_DATABASE = 'temporal_visibility';
const VISIBILITY_TABLE = 'executions_visibility';
const LOCKED = 'visibility-locked';

export interface VisibilityLag {
  /** When the lock was taken (ms since the epoch). */
  since: number;
  /** Sessions waiting on the lock now: the visibility writes it holds back. */
  blockedWrites(): Promise<number>;
  /** How long the oldest blocked write has waited (ms; 0 when none waits). */
  oldestWaitMs(): Promise<number>;
  /** Commits the transaction: the writes that waited go through. Returns how long it was held (ms). */
  release(): Promise<number>;
}

/** The production Temporal's PostgreSQL, or undefined on the dev server. */
export function testPostgres(): { host: string; port: number } | undefined {
  const address = process.env.NETLEASE_TEST_POSTGRES;
  if (!address) return undefined;
  const [host, port] = address.split(':');
  return { host: host ?? '127.0.0.1', port: Number(port) };
}

/** Takes the lock and returns once it is held; throws (ending the session) if it is not within 10 s. */
export async function holdVisibility(): Promise<VisibilityLag> {
  const postgres = testPostgres();
  if (!postgres)
    throw new Error('NETLEASE_TEST_POSTGRES is not set: run with NETLEASE_TEST_TEMPORAL_SERVER=production');
  const args = psqlArgs(postgres);
  const session = startTracked(join(binDir(), 'psql'), [...args, '-v', 'ON_ERROR_STOP=1', '-tAq'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const output = collect(session);
  session.child.stdin?.write(
    `BEGIN;\nLOCK TABLE ${VISIBILITY_TABLE} IN EXCLUSIVE MODE;\nSELECT '${LOCKED}';\n`,
  );
  if (!(await waitFor(() => output().includes(LOCKED), 10000))) {
    await stopPid(session.pid);
    throw new Error(`psql did not lock ${VISIBILITY_TABLE}: ${output()}`);
  }
  const since = Date.now();
  return {
    since,
    blockedWrites: async () => Number(await visibilitySql(postgres, BLOCKED)),
    oldestWaitMs: async () => Number(await visibilitySql(postgres, OLDEST_WAIT)),
    async release() {
      session.child.stdin?.end('COMMIT;\n\\q\n');
      const exited = await Promise.race([session.exited, waitFor(() => false, 10000).then(() => 'late')]);
      if (exited !== 0) {
        await stopPid(session.pid);
        throw new Error(`psql did not commit and exit (${String(exited)}): ${output()}`);
      }
      return Date.now() - since;
    },
  };
}

/** Everything the session printed so far (stdout and stderr). */
function collect(session: Tracked): () => string {
  const chunks: string[] = [];
  session.child.stdout?.on('data', (d: Buffer) => chunks.push(d.toString()));
  session.child.stderr?.on('data', (d: Buffer) => chunks.push(d.toString()));
  return () => chunks.join('');
}

const psqlArgs = ({ host, port }: { host: string; port: number }) => [
  '-h',
  host,
  '-p',
  String(port),
  '-U',
  SUPERUSER,
  '-d',
  VISIBILITY_DATABASE,
];

const WAITING = `FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = '${VISIBILITY_TABLE}' AND NOT l.granted`;
/** Lock requests on the visibility table not granted: writes waiting behind the held lock. */
const BLOCKED = `SELECT count(*) ${WAITING}`;
const OLDEST_WAIT = `SELECT coalesce(max(extract(epoch FROM clock_timestamp() - a.query_start) * 1000), 0)::bigint FROM pg_stat_activity a WHERE a.pid IN (SELECT l.pid ${WAITING})`;

async function visibilitySql(postgres: { host: string; port: number }, query: string): Promise<string> {
  const run = await runToEnd(join(binDir(), 'psql'), [...psqlArgs(postgres), '-tAc', query]);
  if (run.exitCode !== 0) throw new Error(`psql: ${run.stderr.trim()}`);
  return run.stdout.trim();
}
