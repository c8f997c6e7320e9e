// The network configuration on stdin. netlease reads its settings from the top level when it is
// the main plugin (`"type": "netlease"`) and from `ipam` when a main plugin delegates IPAM to it.
import { z } from 'zod';
import { AbsolutePath, TemporalConnectionSchema, describeIssues } from '../domain/config';
import { ConsumeSchema, DataplaneModeSchema } from '../domain/lease';
import { DnsLabelSchema, DnsSubdomainSchema, NetworkNameSchema } from '../domain/names';
import { CniCode, CniError, quoted } from './errors';

export const SUPPORTED_VERSIONS = ['0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;
export const PLUGIN_TYPE = 'netlease';

export const NetleaseSettingsSchema = z.object({
  type: z.literal(PLUGIN_TYPE),
  /**
   * A pool name of the control config: a DNS label (PoolSpecSchema). Omitted: the pod's pool is
   * selected (domain/pool-selection), `default` among equals.
   */
  pool: DnsLabelSchema.optional(),
  /** A Kubernetes node name; defaults to the host name. */
  nodeName: DnsSubdomainSchema.optional(),
  mode: DataplaneModeSchema.optional(),
  temporal: TemporalConnectionSchema.default(TemporalConnectionSchema.parse({})),
  /**
   * Deadline for one CNI call; past it the runtime gets "try again later" (11). At least a second:
   * a shorter one cannot hold a Temporal round trip, and would be 11 for a mistake in the config.
   */
  timeoutSeconds: z.number().min(1).max(600).default(30),
  /**
   * Routes returned with the addresses; default: a default route per family via the gateway.
   * At most 256, as the lease's consume validator accepts.
   */
  routes: ConsumeSchema.shape.routes,
  /** Read by the static shim: the node agent's socket and the DEL queue (defaults in domain/config). */
  agentSocket: AbsolutePath.optional(),
  deleteQueue: AbsolutePath.optional(),
});

/** GC's list of attachments that stay (spec 1.1.0); `cni.dev/attachments` is the older key (CNI #1101). */
const ValidAttachmentsSchema = z.array(
  z.object({ containerID: z.string().min(1), ifname: z.string().min(1) }).passthrough(),
);
export type ValidAttachment = z.infer<typeof ValidAttachmentsSchema>[number];
export type NetleaseSettings = z.infer<typeof NetleaseSettingsSchema>;

const EnvelopeSchema = z
  .object({
    cniVersion: z.string(),
    name: NetworkNameSchema,
    /** The plugin's file name: at most NAME_MAX (255). */
    type: z.string().min(1).max(255),
    ipam: z.record(z.string(), z.unknown()).optional(),
    prevResult: z.unknown().optional(),
    cniVersions: z.array(z.string()).optional(),
  })
  .passthrough();

export interface NetConf {
  cniVersion: string;
  name: string;
  /** True when a main plugin (bridge, macvlan, ...) delegated IPAM to netlease. */
  delegated: boolean;
  settings: NetleaseSettings;
  prevResult?: unknown;
  raw: Record<string, unknown>;
}

export function decodeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new CniError(
      CniCode.decodeFailure,
      'failed to decode network configuration',
      (err as Error).message,
    );
  }
}

/**
 * Only the version: VERSION and errors need it before the rest is known to be valid. None, or
 * an empty one, is 1.1.0, as the shim reads it.
 */
export function requestedVersion(decoded: unknown): string {
  const version = (decoded as { cniVersion?: unknown } | null)?.cniVersion;
  return typeof version === 'string' && version !== '' ? version : '1.1.0';
}

export function checkVersion(version: string): void {
  if (!(SUPPORTED_VERSIONS as readonly string[]).includes(version)) {
    throw new CniError(
      CniCode.incompatibleVersion,
      `incompatible CNI version ${quoted(version)}`,
      `supported: ${SUPPORTED_VERSIONS.join(', ')}`,
    );
  }
}

export function parseNetConf(decoded: unknown): NetConf {
  const envelope = EnvelopeSchema.safeParse(decoded);
  if (!envelope.success) {
    throw new CniError(
      CniCode.invalidNetworkConfig,
      `invalid network configuration: ${describeIssues(envelope.error)}`,
    );
  }
  checkVersion(envelope.data.cniVersion);
  const delegated = envelope.data.type !== PLUGIN_TYPE;
  const source = delegated ? envelope.data.ipam : envelope.data;
  const prefix = delegated ? 'ipam.' : '';
  const settings = NetleaseSettingsSchema.safeParse(source ?? {});
  if (!settings.success) {
    const issues = describeIssues(settings.error)
      .split('; ')
      .map((line) => prefix + line)
      .join('; ');
    throw new CniError(CniCode.invalidNetworkConfig, `invalid network configuration: ${issues}`);
  }
  if (delegated && settings.data.mode === 'ptp') {
    throw new CniError(
      CniCode.invalidNetworkConfig,
      'invalid network configuration: ipam.mode: must be "ipam" when delegated',
    );
  }
  return {
    cniVersion: envelope.data.cniVersion,
    name: envelope.data.name,
    delegated,
    settings: settings.data,
    prevResult: envelope.data.prevResult,
    raw: envelope.data,
  };
}

/** The part of CHECK's prevResult netlease compares: the addresses of `ips`. */
const PrevResultSchema = z
  .object({ ips: z.array(z.object({ address: z.string() }).passthrough()).nullish() })
  .passthrough();

/**
 * The addresses a CHECK's prevResult holds (none without one). A prevResult of another shape is
 * a mistake in the config, error 7 naming the field.
 */
export function prevResultAddresses(prevResult: unknown): string[] {
  if (prevResult === undefined) return [];
  const parsed = PrevResultSchema.safeParse(prevResult);
  if (!parsed.success) {
    const issues = describeIssues(parsed.error)
      .split('; ')
      .map((line) =>
        line.startsWith('(root)') ? line.replace('(root)', 'prevResult') : `prevResult.${line}`,
      )
      .join('; ');
    throw new CniError(CniCode.invalidNetworkConfig, `invalid network configuration: ${issues}`);
  }
  return (parsed.data.ips ?? []).map((ip) => ip.address);
}

/** The attachments GC keeps; none given (cnitool gc) keeps none. */
export function validAttachments(raw: Record<string, unknown>): ValidAttachment[] {
  const key = 'cni.dev/valid-attachments' in raw ? 'cni.dev/valid-attachments' : 'cni.dev/attachments';
  const parsed = ValidAttachmentsSchema.safeParse(raw[key] ?? []);
  if (!parsed.success) {
    const issues = describeIssues(parsed.error)
      .split('; ')
      .map((line) => `${key}${line.startsWith('[') ? '' : '.'}${line}`)
      .join('; ');
    throw new CniError(CniCode.invalidNetworkConfig, `invalid network configuration: ${issues}`);
  }
  return parsed.data;
}
