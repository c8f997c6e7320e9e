// A production-shaped Temporal beside the dev server: the Temporal server (frontend, history,
// matching, worker in one process) on PostgreSQL, several history shards, SQL advanced
// visibility, the namespace and netlease's search attributes registered through the operator
// API. Everything on loopback, every process tracked by PID; the state survives restarts.
import { existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ALL_SEARCH_ATTRIBUTES } from '../domain/search-attributes';
import { SearchAttributeType } from '@temporalio/common';
import { ensurePrograms, programPath, programsNamed } from './programs';
import { startPostgres, type Postgres } from './postgres';
import { freePortIn, runToEnd, startTracked, stopPid, waitFor, type Tracked } from './processes';
import { untilHealthy, type TemporalServer } from './temporal-server';

export interface ProductionTemporalOptions {
  /** Holds PostgreSQL's data, the server's config and its ports (kept: state survives restarts). */
  dir: string;
  /** The frontend's gRPC port (the address netlease's processes are given); below 32768. */
  port: number;
  namespace?: string;
  /** History shards: fixed when the databases are made (default 4). */
  historyShards?: number;
  /** Dynamic config values beside PRODUCTION_DYNAMIC_CONFIG (e.g. a test that makes visibility lag). */
  dynamicConfig?: Record<string, unknown>;
  /** Where the servers' output goes (default: `server.log` in `dir`). */
  logFd?: number;
}

export interface ProductionTemporal extends TemporalServer {
  postgres: Postgres;
  /** The Temporal server alone (a test restarts it; PostgreSQL keeps running). */
  server: Tracked;
  restartServer(): Promise<void>;
}

/**
 * What netlease relies on beyond the defaults (docs/production-temporal.md). Updates, update-with-start
 * and eager workflow start are on by default in 1.29.
 */
export const PRODUCTION_DYNAMIC_CONFIG: Record<string, unknown> = {
  // produceAddresses runs on the worker that scheduled it, without a trip through matching.
  'system.enableActivityEagerExecution': true,
  // A node's task queue has one poller process: one partition, so no task waits on a partition
  // that process is not polling (the control task queue may take more at scale: see docs/production-temporal.md).
  'matching.numTaskqueueReadPartitions': 1,
  'matching.numTaskqueueWritePartitions': 1,
  // The pod watcher lists a pod's leases for each event that may change them (about three per
  // pod), beside the reconciler, CNI GC and the metrics sampler. The default, 10 lists a second
  // per namespace and frontend, held releases back by seconds; the client retries what it refuses.
  'frontend.namespaceRPS.visibility': 1000,
};

const DB_USER = 'temporal';
const DB_PASSWORD = 'temporal';
const DATABASES = { default: 'temporal', visibility: 'temporal_visibility' } as const;
const SCHEMAS = { default: 'postgresql/v12/temporal', visibility: 'postgresql/v12/visibility' } as const;

/** The loopback ports of one state directory, chosen once: the cluster's membership remembers them. */
const PortsSchema = z.object({
  postgres: z.number().int(),
  frontendHttp: z.number().int(),
  rpc: z.object({ history: z.number().int(), matching: z.number().int(), worker: z.number().int() }),
  membership: z.object({
    frontend: z.number().int(),
    history: z.number().int(),
    matching: z.number().int(),
    worker: z.number().int(),
  }),
});
type Ports = z.infer<typeof PortsSchema>;

async function portsOf(dir: string): Promise<Ports> {
  const file = join(dir, 'ports.json');
  if (existsSync(file)) return PortsSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
  // Below 32768: the cluster membership table keeps ports as smallint.
  const next = () => freePortIn(20000, 32000);
  const ports: Ports = {
    postgres: await next(),
    frontendHttp: await next(),
    rpc: { history: await next(), matching: await next(), worker: await next() },
    membership: {
      frontend: await next(),
      history: await next(),
      matching: await next(),
      worker: await next(),
    },
  };
  writeFileSync(file, JSON.stringify(ports, null, 2));
  return ports;
}

export async function startProductionTemporal(
  options: ProductionTemporalOptions,
): Promise<ProductionTemporal> {
  ensurePrograms(programsNamed(['production']));
  mkdirSync(options.dir, { recursive: true });
  options = { ...options, logFd: options.logFd ?? openSync(join(options.dir, 'server.log'), 'a') };
  const ports = await portsOf(options.dir);
  const postgres = await startPostgres({
    dir: join(options.dir, 'postgres'),
    port: ports.postgres,
    logFd: options.logFd,
  });
  const address = `127.0.0.1:${options.port}`;
  let server: Tracked | undefined;
  try {
    await prepareDatabases(postgres);
    writeServerConfig(options, ports);
    server = await startServer(options, address);
    await registerNamespace(address, options.namespace ?? 'default');
  } catch (err) {
    if (server) await stopPid(server.pid);
    await postgres.stop();
    throw err;
  }
  const production: ProductionTemporal = {
    address,
    cli: programPath('temporal'),
    pid: server.pid,
    process: server,
    server,
    postgres,
    pids: () => [production.server.pid, postgres.pid],
    async restartServer() {
      await stopPid(production.server.pid);
      const restarted = await startServer(options, address);
      Object.assign(production, { server: restarted, process: restarted, pid: restarted.pid });
    },
    async stop() {
      await stopPid(production.server.pid);
      await postgres.stop();
    },
  };
  return production;
}

/** The user, both databases and their schemas at the server's version; each step only if missing. */
async function prepareDatabases(postgres: Postgres): Promise<void> {
  const role = await postgres.sql(`SELECT 1 FROM pg_roles WHERE rolname = '${DB_USER}'`);
  if (!role) await postgres.sql(`CREATE ROLE ${DB_USER} LOGIN CREATEDB PASSWORD '${DB_PASSWORD}'`);
  for (const kind of ['default', 'visibility'] as const) {
    const database = DATABASES[kind];
    const exists = await postgres.sql(`SELECT 1 FROM pg_database WHERE datname = '${database}'`);
    if (!exists) {
      await sqlTool(postgres, database, ['create-database']);
      await sqlTool(postgres, database, ['setup-schema', '-v', '0.0']);
    }
    // To the schema version this server needs; nothing to do when it is there.
    await sqlTool(postgres, database, ['update-schema', '--schema-name', SCHEMAS[kind]]);
  }
}

async function sqlTool(postgres: Postgres, database: string, command: string[]): Promise<void> {
  const connection = ['--plugin', 'postgres12', '--ep', postgres.host, '-p', String(postgres.port)];
  const auth = ['-u', DB_USER, '--pw', DB_PASSWORD, '--db', database];
  const run = await runToEnd(programPath('temporal-sql-tool'), [...connection, ...auth, ...command]);
  if (run.exitCode !== 0)
    throw new Error(
      `temporal-sql-tool ${command.join(' ')} on ${database}: ${run.stderr.trim().slice(-2000)}`,
    );
}

const datastore = (database: string, ports: Ports, maxConns: number) => ({
  sql: {
    pluginName: 'postgres12',
    databaseName: database,
    connectAddr: `127.0.0.1:${ports.postgres}`,
    connectProtocol: 'tcp',
    user: DB_USER,
    password: DB_PASSWORD,
    maxConns,
    maxIdleConns: maxConns,
    maxConnLifetime: '1h',
  },
});

/** config/production.yaml (JSON is YAML) and its dynamic config, written at every start. */
function writeServerConfig(options: ProductionTemporalOptions, ports: Ports): void {
  const configDir = join(options.dir, 'config');
  mkdirSync(configDir, { recursive: true });
  const dynamicFile = join(configDir, 'dynamic.yaml');
  const service = (grpcPort: number, membershipPort: number, extra: object = {}) => ({
    rpc: { grpcPort, membershipPort, bindOnLocalHost: true, ...extra },
  });
  const config = {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'default',
      visibilityStore: 'visibility',
      numHistoryShards: options.historyShards ?? 4,
      datastores: {
        default: datastore(DATABASES.default, ports, 20),
        visibility: datastore(DATABASES.visibility, ports, 10),
      },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' } },
    services: {
      frontend: service(options.port, ports.membership.frontend, { httpPort: ports.frontendHttp }),
      history: service(ports.rpc.history, ports.membership.history),
      matching: service(ports.rpc.matching, ports.membership.matching),
      worker: service(ports.rpc.worker, ports.membership.worker),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: `127.0.0.1:${options.port}`,
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: dynamicFile, pollInterval: '10s' },
  };
  writeFileSync(join(configDir, 'production.yaml'), JSON.stringify(config, null, 2));
  const values = { ...PRODUCTION_DYNAMIC_CONFIG, ...options.dynamicConfig };
  const dynamic = Object.fromEntries(Object.entries(values).map(([key, value]) => [key, [{ value }]]));
  writeFileSync(dynamicFile, JSON.stringify(dynamic, null, 2));
}

async function startServer(options: ProductionTemporalOptions, address: string): Promise<Tracked> {
  const out = options.logFd ?? 'ignore';
  const args = ['-r', options.dir, '-c', 'config', '-e', 'production', '--allow-no-auth', 'start'];
  const tracked = startTracked(programPath('temporal-server'), args, { stdio: ['ignore', out, out] });
  const log = `; its log: ${join(options.dir, 'server.log')} unless given another`;
  await untilHealthy(tracked, address, 120000, 'Temporal server', log);
  return tracked;
}

const cli = (address: string, args: string[]) =>
  runToEnd(programPath('temporal'), [...args, '--address', address]);

/**
 * The namespace (unless it exists) and the search attributes (the CLI skips those already there),
 * then waits until a visibility query naming them is accepted: the frontend's namespace and
 * search-attribute caches refresh on their own clock.
 */
async function registerNamespace(address: string, namespace: string): Promise<void> {
  const described = await cli(address, ['operator', 'namespace', 'describe', '-n', namespace]);
  if (described.exitCode !== 0) {
    const made = await cli(address, [
      'operator',
      'namespace',
      'create',
      '-n',
      namespace,
      '--retention',
      '72h',
    ]);
    if (made.exitCode !== 0) throw new Error(`namespace ${namespace}: ${made.stderr.trim()}`);
  }
  const attributes = ALL_SEARCH_ATTRIBUTES.flatMap((key) => [
    '--name',
    key.name,
    '--type',
    key.type === SearchAttributeType.KEYWORD_LIST ? 'KeywordList' : 'Keyword',
  ]);
  // The frontend knows a new namespace only after its cache refreshes: retried until it does.
  let refusal = '';
  const add = async () => {
    const added = await cli(address, [
      'operator',
      'search-attribute',
      'create',
      '-n',
      namespace,
      ...attributes,
    ]);
    refusal = added.stderr.trim();
    return added.exitCode === 0;
  };
  if (!(await waitFor(add, 60000, 500))) throw new Error(`search attributes in ${namespace}: ${refusal}`);
  const query = ALL_SEARCH_ATTRIBUTES.map((key) => `${key.name} = 'x'`).join(' OR ');
  const listable = async () =>
    (await cli(address, ['workflow', 'count', '-n', namespace, '--query', query])).exitCode === 0;
  if (!(await waitFor(listable, 60000, 500)))
    throw new Error(`namespace ${namespace}: the search attributes were not listable within 60 s`);
}
