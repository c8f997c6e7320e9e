// Which Kubernetes node this host is when no nodeName is configured: the host name, trimmed and
// lowercased the way the kubelet derives its own default node name. A host name that still is
// not a node name is refused here, naming the setting that fixes it.
import { hostname } from 'node:os';
import { DnsSubdomainSchema } from '../domain/names';

export class HostNodeNameError extends Error {
  constructor(
    readonly hostName: string,
    reason: string,
  ) {
    super(
      `nodeName: not set, and the host name "${hostName}" is not a Kubernetes node name (${reason}); set nodeName`,
    );
  }
}

/** The kubelet's default node name for this host; throws HostNodeNameError when there is none. */
export function hostNodeName(host: string = hostname()): string {
  const name = host.trim().toLowerCase();
  const parsed = DnsSubdomainSchema.safeParse(name);
  if (!parsed.success) throw new HostNodeNameError(host, parsed.error.issues[0]?.message ?? 'invalid');
  return name;
}

/** A node name given by a setting (`nodeName`, NETLEASE_NODE_NAME), checked; undefined when unset. */
export function configuredNodeName(value: string | undefined, setting: string): string | undefined {
  if (!value) return undefined;
  const parsed = DnsSubdomainSchema.safeParse(value);
  if (!parsed.success)
    throw new Error(`${setting} "${value}": ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return value;
}

/** For labels only (logs): the host's node name, or the raw host name when it is not one. */
export function hostNodeLabel(): string {
  try {
    return hostNodeName();
  } catch {
    return hostname();
  }
}
