// PostgreSQL from Debian for the production-shaped Temporal: its own data directory, loopback
// only, started and stopped by PID. PostgreSQL refuses to run as root, so as root it runs as the
// `postgres` user the Debian package creates (the data directory is handed to that user).
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { runToEnd, startTracked, stopPid, waitFor, type Tracked } from './processes';

export interface Postgres {
  host: string;
  port: number;
  pid: number;
  process: Tracked;
  /** `psql -c` as the superuser; throws with PostgreSQL's message on an error. */
  sql(statement: string, database?: string): Promise<string>;
  stop(): Promise<void>;
}

export interface PostgresOptions {
  /** Holds `data/` (kept across restarts) and the server's socket. */
  dir: string;
  port: number;
  logFd?: number;
}

export const SUPERUSER = 'postgres';

/** The newest PostgreSQL the Debian packages installed (`/usr/lib/postgresql/<major>/bin`). */
export function binDir(): string {
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root) ? readdirSync(root).filter((d) => /^\d+$/.test(d)) : [];
  const newest = majors.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest)
    throw new Error(`no PostgreSQL in ${root}: run sh tools/bootstrap.sh --production (Debian's postgresql)`);
  return join(root, newest, 'bin');
}

/** As root: the `postgres` user's ids from /etc/passwd (the server will not start as root). */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${SUPERUSER}:`));
  const [, , uid, gid] = (line ?? '').split(':');
  if (!uid || !gid)
    throw new Error(`no user ${SUPERUSER}: install Debian's postgresql (sh tools/bootstrap.sh --production)`);
  return { uid: Number(uid), gid: Number(gid) };
}

async function initDataDir(bin: string, data: string, owner: ReturnType<typeof runAs>): Promise<void> {
  if (existsSync(join(data, 'PG_VERSION'))) return;
  const args = ['-D', data, '-U', SUPERUSER, '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8'];
  const init = await runAsOwner(join(bin, 'initdb'), args, owner);
  if (init.exitCode !== 0) throw new Error(`initdb failed: ${init.stderr.trim()}`);
}

/** A program run to its end as the data directory's owner (`runuser` when we are root). */
function runAsOwner(command: string, args: string[], owner: ReturnType<typeof runAs>) {
  return owner ? runToEnd('runuser', ['-u', SUPERUSER, '--', command, ...args]) : runToEnd(command, args);
}

/**
 * mkdtemp makes private (0700) directories: under the temporary directory, the ones above `dir`
 * get search permission for others (not listing) so the `postgres` user reaches its own.
 */
function traversableInTmp(dir: string): void {
  for (let up = dirname(dir); isInside(up, tmpdir()); up = dirname(up)) {
    const { mode } = statSync(up);
    if ((mode & 0o001) === 0) chmodSync(up, (mode & 0o7777) | 0o011);
  }
}

const isInside = (path: string, root: string): boolean => {
  const rel = relative(root, path);
  return rel !== '' && !rel.startsWith('..');
};

export async function startPostgres(options: PostgresOptions): Promise<Postgres> {
  const bin = binDir();
  const owner = runAs();
  const data = join(options.dir, 'data');
  mkdirSync(options.dir, { recursive: true });
  if (owner) {
    chownSync(options.dir, owner.uid, owner.gid);
    traversableInTmp(options.dir);
    const reach = await runAsOwner('test', ['-w', options.dir], owner);
    if (reach.exitCode !== 0)
      throw new Error(
        `the ${SUPERUSER} user cannot reach ${options.dir}: make its parent directories traversable`,
      );
  }
  await initDataDir(bin, data, owner);
  const out = options.logFd ?? 'ignore';
  // Loopback TCP only; the socket in our own directory, not /var/run/postgresql.
  const args = ['-D', data, '-h', '127.0.0.1', '-p', String(options.port), '-k', options.dir];
  const tracked = startTracked(join(bin, 'postgres'), args, {
    stdio: ['ignore', out, out],
    ...(owner ?? {}),
  });
  const host = '127.0.0.1';
  const sql = async (statement: string, database = 'postgres') => {
    const psqlArgs = ['-h', host, '-p', String(options.port), '-U', SUPERUSER, '-d', database];
    const run = await runToEnd(join(bin, 'psql'), [...psqlArgs, '-v', 'ON_ERROR_STOP=1', '-tAc', statement]);
    if (run.exitCode !== 0) throw new Error(`psql: ${run.stderr.trim()}`);
    return run.stdout.trim();
  };
  const postgres: Postgres = {
    host,
    port: options.port,
    pid: tracked.pid,
    process: tracked,
    sql,
    // SIGINT is PostgreSQL's fast shutdown: sessions are ended, data is flushed.
    stop: () => stopWith(tracked.pid),
  };
  let exitCode: number | null | undefined;
  void tracked.exited.then((code) => (exitCode = code ?? -1));
  const ready = async () => exitCode !== undefined || (await isReady(bin, host, options.port));
  if (!(await waitFor(ready, 60000, 200)) || exitCode !== undefined) {
    await postgres.stop();
    throw new Error(
      `PostgreSQL on ${host}:${options.port} did not accept connections (exit ${exitCode ?? 'none'})`,
    );
  }
  return postgres;
}

async function isReady(bin: string, host: string, port: number): Promise<boolean> {
  const run = await runToEnd(join(bin, 'pg_isready'), ['-h', host, '-p', String(port), '-U', SUPERUSER]);
  return run.exitCode === 0;
}

async function stopWith(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return;
  }
  await stopPid(pid, 20000);
}
