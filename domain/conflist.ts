// The node's conflist as an ADD reads it, against the node agent's `preProduce`: a pre-produced
// lease answers only an ADD of its own terms, so the two files must name the same network, mode,
// pool and interface, or the pods' ADDs never meet the leases made for them.
import { z } from 'zod';
import type { PreProduce } from './config';
import { DataplaneModeSchema, type DataplaneMode } from './lease';
import { describeIssues } from './text-schemas';

/** Where install-cni writes its conflist, as the node agent's DaemonSet mounts the host's /etc/cni/net.d. */
export const DEFAULT_CNI_CONF_DIR = '/host/etc/cni/net.d';
export const DEFAULT_CONFLIST_NAME = '10-netlease.conflist';
export const DEFAULT_CONFLIST = `${DEFAULT_CNI_CONF_DIR}/${DEFAULT_CONFLIST_NAME}`;

/**
 * Kubernetes runtimes (containerd, CRI-O) call ADD for a pod's default network with CNI_IFNAME
 * eth0; the conflist itself names no interface.
 */
export const DEFAULT_NETWORK_IFNAME = 'eth0';

/** The lease mode of an ADD: a delegated IPAM plugin only hands out addresses. */
export const networkMode = (delegated: boolean, mode: DataplaneMode | undefined): DataplaneMode =>
  delegated ? 'ipam' : (mode ?? 'ipam');

type Terms = Pick<PreProduce, 'network' | 'mode' | 'pool' | 'ifName'>;

// Only what decides the terms (defaults as cni/netconf's); the rest is the runtime's and the shim's.
const Settings = z.looseObject({ mode: DataplaneModeSchema.optional(), pool: z.string().optional() });
const ConflistSchema = z.looseObject({
  name: z.string(),
  plugins: z.array(z.looseObject({ type: z.string(), ipam: z.looseObject({ type: z.string() }).optional() })),
});

/**
 * The terms of an ADD through this conflist's netlease plugin (main or delegated IPAM), or why
 * there are none ("is not a conflist (…)", "has no netlease plugin (…)").
 */
export function conflistTerms(conflist: unknown): Terms | string {
  const list = ConflistSchema.safeParse(conflist);
  if (!list.success) return `is not a conflist (${describeIssues(list.error)})`;
  const main = list.data.plugins.find((p) => p.type === 'netlease');
  const delegating = list.data.plugins.find((p) => p.ipam?.type === 'netlease');
  const source = main ?? delegating?.ipam;
  if (!source) return 'has no netlease plugin (type or ipam.type "netlease")';
  const settings = Settings.safeParse(source);
  if (!settings.success) return `has an invalid netlease plugin (${describeIssues(settings.error)})`;
  return {
    network: list.data.name,
    mode: networkMode(!main, settings.data.mode),
    pool: settings.data.pool,
    ifName: DEFAULT_NETWORK_IFNAME,
  };
}

const text = (t: Terms) => `network ${t.network} (${t.mode}, pool ${t.pool ?? '(selected)'}, ${t.ifName})`;

/**
 * One line naming both sides when the agent's preProduce is not what ADDs through `conflist` ask
 * for; undefined when they agree. `source` names the conflist (its path).
 */
export function preProduceMismatch(preProduce: Terms, conflist: unknown, source: string): string | undefined {
  const terms = conflistTerms(conflist);
  if (typeof terms === 'string')
    return `preProduce is ${text(preProduce)}, but ${source} ${terms}: no ADD will match its leases`;
  const differs = (['network', 'mode', 'pool', 'ifName'] as const).filter((k) => preProduce[k] !== terms[k]);
  if (differs.length === 0) return undefined;
  const runtime = differs.includes('ifName') ? ' as runtimes name the default network' : '';
  return (
    `preProduce differs from ${source} in ${differs.join(', ')}: preProduce is ${text(preProduce)}, ` +
    `the conflist ${text(terms)}${runtime}; pods' ADDs will not match the leases pre-produced for them`
  );
}
