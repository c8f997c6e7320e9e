// The lease of one pod interface: phases, requests and results, as zod schemas where they cross
// a boundary (CNI shim → lease workflow, operator → lease workflow).
import { z } from 'zod';
import type { AddressGrant } from './allocation';
import { RouteSchema, type Route } from './routes';

/** Bytes the kernel's dev_valid_name refuses: "/", ":" and its isspace(), which includes 0xA0. */
const REFUSED_BYTES = new Set([0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x2f, 0x3a, 0xa0]);

/**
 * A Linux interface name: 1-15 bytes (IFNAMSIZ 16 with the NUL; "é" is two), none the kernel
 * refuses, no Unicode whitespace, not "." or "..", no "%": the kernel takes a name with one as a
 * template ("eth%d" makes eth0, another name than asked; "%00" is refused: the CI's fuzz).
 */
export function isInterfaceName(name: string): boolean {
  // TextEncoder, not Buffer: the workflow sandbox provides it and has no Node built-ins.
  const bytes = new TextEncoder().encode(name);
  return (
    bytes.length >= 1 &&
    bytes.length <= 15 &&
    !bytes.some((b) => REFUSED_BYTES.has(b)) &&
    !/[\s%]/.test(name) &&
    name !== '.' &&
    name !== '..'
  );
}

export const LEASE_PHASES = [
  'Producing',
  'Produced',
  'Consumed',
  'Activating',
  'Active',
  'Running',
  'Stalled',
  'ActivationFailed',
  'Releasing',
  'Released',
] as const;
export type LeasePhase = (typeof LEASE_PHASES)[number];

export const DataplaneModeSchema = z.enum(['ipam', 'ptp']);
export type DataplaneMode = z.infer<typeof DataplaneModeSchema>;

const name = z.string().min(1).max(253);
const ifName = z
  .string()
  .refine(isInterfaceName, 'not a Linux interface name (1-15 bytes, no "/", ":", "%" or space)');

export const LeaseStartSchema = z.object({
  podUid: z.string().min(1).max(128),
  podNamespace: z.string().max(63),
  podName: z.string().max(253),
  ifName,
  nodeName: name,
  pool: z.string().min(1).max(63),
  mode: DataplaneModeSchema,
  /** The CNI network name: GC of one network leaves the others' attachments alone. */
  network: z.string().max(253).optional(),
  /** The pod's static addresses (domain/static-addresses), canonical and comma-joined, IPv4 first. */
  staticAddresses: z.string().min(1).max(100).optional(),
  /** The sticky reservation they are (domain/sticky-addresses): `<namespace>/<statefulset>/<ordinal>`. */
  stickyKey: z.string().min(1).max(400).optional(),
});
export type LeaseStart = z.infer<typeof LeaseStartSchema>;

/** A link activation made: the host end (no sandbox) or the pod end (sandbox = its netns). */
export const LinkInfoSchema = z.object({
  name: z.string().min(1).max(15),
  mac: z.string().max(17),
  sandbox: z.string().max(4095).optional(),
});
export type LinkInfo = z.infer<typeof LinkInfoSchema>;

export const ActivatedLinksSchema = z.object({ host: LinkInfoSchema, container: LinkInfoSchema });
export type ActivatedLinks = z.infer<typeof ActivatedLinksSchema>;

/**
 * What an ADD asks of the lease besides the pod interface: the node, pool, mode and network its
 * answer depends on. An ADD is served only by a lease of the same terms (domain/offer too).
 */
export const LeaseTermsSchema = LeaseStartSchema.pick({
  nodeName: true,
  pool: true,
  mode: true,
  network: true,
  staticAddresses: true,
  stickyKey: true,
});
export type LeaseTerms = z.infer<typeof LeaseTermsSchema>;

const TERM_KEYS = ['nodeName', 'pool', 'mode', 'network', 'staticAddresses', 'stickyKey'] as const;

/** The terms of a start; the static addresses and sticky key only when it has them (older starts do not). */
export const termsOf = (start: LeaseStart): LeaseTerms => {
  const { nodeName, pool, mode, network, staticAddresses, stickyKey } = start;
  return {
    nodeName,
    pool,
    mode,
    network,
    ...(staticAddresses ? { staticAddresses } : {}),
    ...(stickyKey ? { stickyKey } : {}),
  };
};

/** The addresses a lease asked for by name (static, or its sticky reservation's): none for most. */
export const askedAddresses = (start: Pick<LeaseStart, 'staticAddresses'>): string[] =>
  start.staticAddresses ? start.staticAddresses.split(',') : [];

/** `network n (ptp, pool p, node x, addresses a)`: terms as a message names them. */
export const termsText = (terms: LeaseTerms, withNode = true): string => {
  const node = withNode ? `, node ${terms.nodeName}` : '';
  const kept = terms.stickyKey ? ` kept for ${terms.stickyKey}` : '';
  const fixed = terms.staticAddresses ? `, static addresses ${terms.staticAddresses}${kept}` : '';
  return `network ${terms.network ?? '(none)'} (${terms.mode}, pool ${terms.pool}${node}${fixed})`;
};

/**
 * Why an ADD of these terms cannot be answered by this lease, naming both sides; undefined when
 * they agree. The answer would be another network's (seed 003: "ready" with no interface made).
 */
export function termsMismatch(start: LeaseStart, terms: LeaseTerms): string | undefined {
  const lease = termsOf(start);
  const differs = TERM_KEYS.some((key) => (lease[key] ?? '') !== (terms[key] ?? ''));
  if (!differs) return undefined;
  const withNode = lease.nodeName !== terms.nodeName;
  const pod = start.podName ? `pod ${start.podNamespace}/${start.podName}` : `pod UID ${start.podUid}`;
  return (
    `${pod}'s ${start.ifName} lease was produced for ${termsText(lease, withNode)}; ` +
    `this ADD is for ${termsText(terms, withNode)}`
  );
}

/** The sandbox of an ADD: what the lease keeps as its attachment. */
export const SandboxSchema = z.object({
  containerId: z.string().min(1).max(256),
  netns: z.string().max(4095),
  ifName,
  /** Routes from the network config; omitted: a default route per family via the gateway. */
  routes: z.array(RouteSchema).max(256).optional(),
});
export type Sandbox = z.infer<typeof SandboxSchema>;

/**
 * Who makes an ADD's interface: the node agent (it answers the runtime and confirms the answer to
 * the lease, as from an offer), or the lease (its activation, with retries and parking: the agent
 * could not make it, or an older caller that does not say).
 */
export const InterfaceMakerSchema = z.enum(['agent', 'lease']);
export type InterfaceMaker = z.infer<typeof InterfaceMakerSchema>;

/** A CNI ADD: the runtime claims the lease for one sandbox (attachment), on the ADD's terms. */
export const ConsumeSchema = SandboxSchema.extend({
  terms: LeaseTermsSchema,
  madeBy: InterfaceMakerSchema.optional(),
});
export type ConsumeRequest = z.infer<typeof ConsumeSchema>;

/** A CNI DEL: the sandbox goes away; the address stays with the pod. */
export const DeactivateSchema = z.object({
  containerId: z.string().min(1),
  ifName: z.string().min(1).max(15),
});
export type DeactivateRequest = z.infer<typeof DeactivateSchema>;

export const ReleaseSchema = z.object({
  reason: z.string().min(1),
  /** Node incarnation gone: node-local steps are skipped. */
  nodeGone: z.boolean().default(false),
});
export type ReleaseRequest = z.input<typeof ReleaseSchema>;

/** pending: waiting for activation; parked: activation budget spent, waits for `retry`. */
export type AttachmentStatus = 'pending' | 'activating' | 'active' | 'parked';

export interface Attachment {
  containerId: string;
  netns: string;
  ifName: string;
  status: AttachmentStatus;
  routes?: Route[];
  /** What activation made on the node (ptp mode). */
  links?: ActivatedLinks;
}

/** What the CNI shim formats into a CNI result. */
export interface LeaseGrant {
  leaseId: string;
  addresses: AddressGrant[];
  containerId: string;
  ifName: string;
  links?: ActivatedLinks;
  /**
   * The interface is the agent's to make (a consume `madeBy` the agent, ptp): the run whose grant it
   * now holds as an answered offer, to confirm once made (domain/offer).
   */
  run?: string;
}

export interface LeaseState {
  phase: LeasePhase;
  start: LeaseStart;
  addresses: AddressGrant[];
  attachments: Attachment[];
  lastError?: string;
  releaseReason?: string;
  /** A runtime was told the addresses (an ADD answered): the terms are no longer a guess. */
  told?: boolean;
}

/** What a closed run of a lease held, for a new run of it while its pod still runs. */
export interface RecoveredLease {
  attachments: Array<Omit<Attachment, 'status'>>;
  podRunning: boolean;
  /** Why the lease was started again (its earlier run's status). */
  reason: string;
}

/** Failure types of the lease, node and pool workflows; cni/refusals gives each its CNI code and reason. */
export const FailureType = {
  invalidConfig: 'InvalidConfig',
  unsupported: 'Unsupported',
  exhausted: 'PoolExhausted',
  released: 'LeaseReleased',
  activationFailed: 'ActivationFailed',
  conflict: 'AddressConflict',
  /** No Node of that name now: a same-name replacement in progress, or a typo (the ADD says which). */
  nodeUnknown: 'NodeUnknown',
  /** The ADD's network, mode, pool or node is not the lease's (termsMismatch). */
  termsMismatch: 'TermsMismatch',
  /** Transient: the node workflow is about to continue-as-new; the caller sends the request again. */
  nodeContinuing: 'NodeContinuing',
  /** Transient: a node or pool is rebuilding its table from the leases; sent again after. */
  tableRebuilding: 'TableRebuilding',
  /** A node's or pool's table is not verified (a reset run): the caller asks for a rebuild first. */
  tableUnverified: 'TableUnverified',
  /** The Node incarnation the request read is gone (replaced meanwhile): the runtime tries again. */
  incarnationGone: 'IncarnationGone',
  /** The pod's static address is another pod's (or cooling, or in another node's block): later. */
  staticAddressHeld: 'StaticAddressHeld',
  /** A sticky address's previous holder has not let go (its sandbox not known gone): later. */
  stickyAddressFenced: 'StickyAddressFenced',
} as const;
export type FailureTypeName = (typeof FailureType)[keyof typeof FailureType];
