// install-cni, the node agent DaemonSet's init container: copies the CNI shim into the host's CNI
// bin dir and writes netlease's network config list into its conf dir, each only when it differs
// and atomically (storage/install-files). It runs in the netlease image: the host has no Node.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { SUPPORTED_VERSIONS } from '../../cni/netconf';
import { describeIssues, TemporalConnectionSchema } from '../../domain/config';
import { DEFAULT_CNI_CONF_DIR, DEFAULT_CONFLIST_NAME } from '../../domain/conflist';
import { DataplaneModeSchema } from '../../domain/lease';
import { DnsLabelSchema, DnsSubdomainSchema, NetworkNameSchema } from '../../domain/names';
import { installFile } from '../../storage/install-files';

const ROOT = join(__dirname, '..', '..', '..');
export const DEFAULTS = {
  source: join(ROOT, 'dist', 'bin', 'netlease'),
  binDir: '/host/opt/cni/bin',
  confDir: DEFAULT_CNI_CONF_DIR,
  confName: DEFAULT_CONFLIST_NAME,
  agentSocket: '/run/netlease/cni.sock',
  deleteQueue: '/var/lib/netlease/cni-del-queue',
};

const absolute = z.string().refine(isAbsolute, 'must be an absolute path');
const isKind = (path: string, dir: boolean) => existsSync(path) && statSync(path).isDirectory() === dir;
const missing = (what: string) => ({
  error: (issue: { input: unknown }) => `${what}: ${String(issue.input)}`,
});
const directory = absolute.refine((p) => isKind(p, true), missing('no such directory'));

/** The netlease plugin's entry in the conflist (what the shim reads), plus whether loopback comes first. */
export const NetworkSchema = z.strictObject({
  name: NetworkNameSchema.default('netlease'),
  mode: DataplaneModeSchema.default('ptp'),
  pool: DnsLabelSchema.default('default'),
  /** The Kubernetes node name; the DaemonSet passes spec.nodeName (NETLEASE_NODE_NAME). */
  nodeName: DnsSubdomainSchema.optional(),
  loopback: z.boolean().default(true),
  agentSocket: absolute.default(DEFAULTS.agentSocket),
  deleteQueue: absolute.default(DEFAULTS.deleteQueue),
  /** The control plane the agent reaches for this network, when not 127.0.0.1:7233, netlease-control. */
  temporal: TemporalConnectionSchema.optional(),
  /** The conflist's version: 1.0.0 for runtimes whose libcni predates CNI 1.1 (containerd 1.6). */
  cniVersion: z.enum(SUPPORTED_VERSIONS).default('1.1.0'),
});
export type Network = z.infer<typeof NetworkSchema>;

export const InstallOptionsSchema = z.strictObject({
  source: z
    .string()
    .min(1)
    .transform((p) => resolve(p))
    .refine((p) => isKind(p, false), missing('no such file'))
    .prefault(DEFAULTS.source),
  binDir: directory.prefault(DEFAULTS.binDir),
  confDir: directory.prefault(DEFAULTS.confDir),
  confName: z
    .string()
    .max(255)
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*\.conflist$/, 'a file name ending in .conflist')
    .default(DEFAULTS.confName),
  network: NetworkSchema.prefault({}),
});
export type InstallOptions = z.infer<typeof InstallOptionsSchema>;

/** Flag → [field (network.* inside `network`), environment variable]; flags win over env over --config. */
const FIELDS: Record<string, [string, string?]> = {
  source: ['source', 'NETLEASE_CNI_SOURCE'],
  'bin-dir': ['binDir', 'NETLEASE_CNI_BIN_DIR'],
  'conf-dir': ['confDir', 'NETLEASE_CNI_CONF_DIR'],
  'conf-name': ['confName'],
  name: ['network.name'],
  mode: ['network.mode'],
  pool: ['network.pool'],
  'node-name': ['network.nodeName', 'NETLEASE_NODE_NAME'],
  'agent-socket': ['network.agentSocket'],
  'delete-queue': ['network.deleteQueue'],
};
const USAGE = `usage: node dist/worker/agent/install-cni.js [--config <yaml>] ${Object.keys(FIELDS)
  .map((f) => `[--${f} <value>]`)
  .join(' ')} [--no-loopback]`;

export class InstallError extends Error {
  override name = 'InstallError';
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The options from a --config file (YAML or JSON, shaped like InstallOptionsSchema), env and flags. */
export function readOptions(argv: string[], env: NodeJS.ProcessEnv): InstallOptions {
  const strings = Object.fromEntries(Object.keys(FIELDS).map((f) => [f, { type: 'string' as const }]));
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { ...strings, config: { type: 'string' }, 'no-loopback': { type: 'boolean' } },
    }));
  } catch (err) {
    throw new InstallError(`${(err as Error).message}\n${USAGE}`);
  }
  const config = typeof values.config === 'string' ? values.config : undefined;
  let raw: unknown = {};
  if (config) {
    try {
      raw = parseYaml(readFileSync(config, 'utf8')) ?? {};
    } catch (err) {
      throw new InstallError(`config: ${config}: ${(err as Error).message}`);
    }
  }
  if (!isRecord(raw)) throw new InstallError(`config: ${config}: expected a mapping`);
  const top: Record<string, unknown> = { ...raw };
  const network: Record<string, unknown> = isRecord(raw.network) ? { ...raw.network } : {};
  for (const [flag, [field, envName]] of Object.entries(FIELDS)) {
    const value = values[flag] ?? (envName ? env[envName] || undefined : undefined);
    if (value === undefined) continue;
    if (field.startsWith('network.')) network[field.slice('network.'.length)] = value;
    else top[field] = value;
  }
  if (values['no-loopback']) network.loopback = false;
  if (raw.network === undefined || isRecord(raw.network)) top.network = network;
  const parsed = InstallOptionsSchema.safeParse(top);
  if (!parsed.success) throw new InstallError(`invalid options: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

export function conflist(network: Network): Record<string, unknown> {
  const { name, loopback, cniVersion, ...plugin } = network;
  const plugins = [...(loopback ? [{ type: 'loopback' }] : []), { type: 'netlease', ...plugin }];
  return { cniVersion, name, plugins };
}

/** One line per action on `log`; what an operator should look at on `warn`. */
export function install(options: InstallOptions, log: (line: string) => void, warn = log): void {
  // The binary first: the runtime must never find a conflist naming a plugin it cannot exec.
  const binary = readFileSync(options.source);
  const shim = join(options.binDir, 'netlease');
  const sha = createHash('sha256').update(binary).digest('hex').slice(0, 12);
  const copied = installFile(shim, binary, 0o755) === 'written';
  log(copied ? `copied ${shim} from ${options.source} (sha256 ${sha})` : `unchanged ${shim}`);
  const path = join(options.confDir, options.confName);
  const text = Buffer.from(`${JSON.stringify(conflist(options.network), null, 2)}\n`);
  log(installFile(path, text, 0o644) === 'written' ? `wrote ${path}` : `unchanged ${path}`);
  if (options.network.loopback && !existsSync(join(options.binDir, 'loopback')))
    warn(`warning: no loopback plugin in ${options.binDir}; ADDs fail until the runtime's plugins are there`);
  // Runtimes use the lexically first config file of the conf dir.
  const first = readdirSync(options.confDir)
    .filter((f) => /\.(conf|conflist|json)$/.test(f))
    .sort()[0];
  if (first !== options.confName)
    warn(`warning: ${first} sorts before ${options.confName}: the runtime uses ${first}`);
}

if (require.main === module) {
  try {
    install(readOptions(process.argv.slice(2), process.env), console.log, console.error);
  } catch (err) {
    console.error(`install-cni: ${(err as Error).message}`);
    process.exitCode = err instanceof InstallError ? 2 : 1;
  }
}
