// The Temporal servers the bench can run against, one entry per kind: the dev server it starts
// itself, the production-shaped server on PostgreSQL it starts itself, or a server already running
// at an address (NETLEASE_BENCH_TEMPORAL).
import { openSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, freePortIn } from '../../tools/processes';
import { startDevServer } from '../../tools/temporal-server';
import { startProductionTemporal } from '../../tools/temporal-production';

export interface BenchTemporal {
  /** As the report names it. */
  label: string;
  address: string;
  /** Its processes whose CPU every netlease row is charged, by name (the first is `temporal`). */
  pids: Record<string, number>;
  /** Its persistence's write counters (the production server's PostgreSQL), to charge per lease. */
  writes?(): Promise<PersistenceWrites>;
  stop(): Promise<void>;
}

/** Cumulative writes of both Temporal databases (pg_stat_database, the WAL position). */
export interface PersistenceWrites {
  transactions: number;
  rows: number;
  walBytes: number;
}

const WRITES = `SELECT sum(xact_commit)::bigint, sum(tup_inserted + tup_updated + tup_deleted)::bigint,
  pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint FROM pg_stat_database
  WHERE datname IN ('temporal', 'temporal_visibility')`;

/**
 * The WAL position is exact; a backend reports its commits and rows to pg_stat_database within
 * seconds (PostgreSQL 15), immaterial over a run of minutes.
 */
async function writesOf(sql: (statement: string) => Promise<string>): Promise<PersistenceWrites> {
  const [transactions, rows, walBytes] = (await sql(WRITES.replace(/\s+/g, ' '))).split('|').map(Number);
  return { transactions: transactions ?? NaN, rows: rows ?? NaN, walBytes: walBytes ?? NaN };
}

export interface TemporalKind {
  label: string;
  start(dir: string, tuned: boolean): Promise<BenchTemporal>;
}

/** The pinned dev server (SQLite in memory, one history shard), on a free loopback port. */
const devServer: TemporalKind = {
  label: 'dev server',
  async start(dir, tuned) {
    const logFd = openSync(join(dir, 'temporal.log'), 'a');
    const server = await startDevServer({ port: await freePort(), tuned, logFd });
    const label = `dev server${tuned ? '' : ' (untuned)'}`;
    return { label, address: server.address, pids: { temporal: server.pid }, stop: server.stop };
  },
};

/**
 * The Temporal server on PostgreSQL (tools/temporal-production.ts, 4 history shards, SQL
 * visibility), in the bench's directory. PostgreSQL's CPU is its process tree's (proc.ts).
 */
const productionServer: TemporalKind = {
  label: 'production server (PostgreSQL)',
  async start(dir) {
    const logFd = openSync(join(dir, 'temporal-production.log'), 'a');
    const port = await freePortIn(20000, 32000);
    const server = await startProductionTemporal({ dir: join(dir, 'temporal-production'), port, logFd });
    const pids = { temporal: server.pid, postgres: server.postgres.pid };
    const writes = () => writesOf((statement) => server.postgres.sql(statement));
    return { label: 'production server', address: server.address, pids, writes, stop: server.stop };
  },
};

/**
 * A server someone else runs (its namespace and netlease's search attributes registered): the
 * bench neither starts nor stops it. Its CPU is charged only for the processes named in `pids`.
 */
const existingServer = (address: string, pids: Record<string, number>): TemporalKind => ({
  label: `server at ${address}`,
  start: async () => ({ label: 'existing server', address, pids, stop: async () => undefined }),
});

/** The kinds by the name NETLEASE_BENCH_TEMPORAL gives them; anything else is an address. */
const KINDS: Record<string, TemporalKind> = { dev: devServer, production: productionServer };

/** `name=pid,name=pid` (NETLEASE_BENCH_TEMPORAL_PIDS): the existing server's processes. */
function namedPids(text: string | undefined): Record<string, number> {
  const pairs = (text ?? '').split(',').filter((p) => p.includes('='));
  return Object.fromEntries(pairs.map((p) => [p.split('=')[0] as string, Number(p.split('=')[1])]));
}

/**
 * NETLEASE_BENCH_TEMPORAL: `dev` (default), `production`, or `host:port` of a running server;
 * comma-separated, the bench measures on each in turn in one run. NETLEASE_BENCH_TEMPORAL_PIDS
 * names a running server's processes (`temporal=123,postgres=456`) so its CPU is counted.
 */
export function selectedServers(env: NodeJS.ProcessEnv = process.env): TemporalKind[] {
  const names = (env.NETLEASE_BENCH_TEMPORAL ?? 'dev').split(',').map((n) => n.trim());
  return names
    .filter((n) => n !== '')
    .map((n) => KINDS[n] ?? existingServer(n, namedPids(env.NETLEASE_BENCH_TEMPORAL_PIDS)));
}

/** Whether the bench started this server itself (a fresh one: its workflow ids are free). */
export const isOwnServer = (kind: TemporalKind): boolean => Object.values(KINDS).includes(kind);
