// One generated CNI call: the environment and stdin a runtime would hand the shim, and what the
// generator changed from a valid call, so the oracle knows what the answer must say.
import fc from 'fast-check';

/** What the generators need to know of the site: names a valid call uses. */
export interface FuzzTerms {
  taskQueue: string;
  node: string;
  pool: string;
  temporalAddress: string;
  agentSocket: string;
  deleteQueue: string;
  /** The Kubernetes namespace of the pods below. */
  podNamespace: string;
  /** Pods bound to the node whose leases the agent has offered (ADDs answered from its offer). */
  offered: Array<{ name: string; uid: string }>;
  /** A loopback port nothing listens on: Temporal unreachable. */
  deadPort: number;
}

/** CNI_NETNS values resolved when the call is made: the site's current pristine pod namespace, its host namespace. */
export const POD_NETNS = '@pod-netns@';
export const HOST_NETNS = '@host-netns@';

/** One change from the valid call. */
export interface Mutation {
  /** The variable or field changed (`CNI_IFNAME`, `temporal.taskQueue`, `stdin`). */
  field: string;
  /** What was done, for the report. */
  what: string;
  /** The value breaks the spec or netlease's rules: an ADD carrying it must be refused. */
  invalid: boolean;
  /** The codes a refusal may carry (any spec code when absent). */
  codes?: number[];
  /** Words one of which the refusal's message names (when it is the only change). */
  names?: string[];
  /**
   * A condition a retry may outlive (Temporal unreachable, a netns still being made, a Node not
   * known yet): code 11 (50 for STATUS) is right, and the lease it started may stay.
   */
  transient?: boolean;
  /** Broken for a lease an ADD starts, but an offered pod's ADD is answered from its lease's offer. */
  offerMayAnswer?: boolean;
  /** Only ADD asks about it (a pool or task queue nobody serves): the codes hold for ADD alone. */
  addOnly?: boolean;
  /** JSON the shim's reader refuses (nested past encoding/json's limit) and the agent's reads. */
  shimUnreadable?: boolean;
}

export interface FuzzInput {
  env: Record<string, string>;
  stdin: string;
  /** The shim's stdin as bytes when it must not be UTF-8 (the API gets it decoded). */
  stdinBytes?: Uint8Array;
  mutations: Mutation[];
}

const SHOWN = 120;

/** A value as a report shows it: long strings cut, their length said. */
export function shortText(text: string): string {
  const json = JSON.stringify(text);
  return json.length <= SHOWN ? json : `${json.slice(0, SHOWN)}…(${text.length} characters)`;
}

/** How fast-check prints a counterexample: bounded, even for a 16 MB stdin. */
export function describeInput(input: FuzzInput): string {
  const env = Object.entries(input.env)
    .map(([k, v]) => `${k}=${shortText(v)}`)
    .join(' ');
  const changes = input.mutations.map((m) => `${m.field}: ${m.what}`).join('; ') || 'none (a valid call)';
  const bytes = input.stdinBytes ? ` (as ${input.stdinBytes.length} raw bytes)` : '';
  return `{env: ${env}; stdin: ${shortText(input.stdin)}${bytes}; changes: ${changes}}`;
}

/** The input with its printer attached (fast-check's toStringMethod). */
export const printable = (input: FuzzInput): FuzzInput =>
  Object.assign(input, { [fc.toStringMethod]: () => describeInput(input) });

/** The command the call names (undefined: none). */
export const commandOf = (input: FuzzInput): string | undefined => input.env.CNI_COMMAND;
