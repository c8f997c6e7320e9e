// Sticky StatefulSet addresses (issue 29 item 1): a StatefulSet pod's addresses are reserved for
// `<namespace>/<statefulset>/<ordinal>`, not for a pod UID, in its pool workflow's state. A new pod
// of the ordinal asks for them as static addresses (./static-addresses): its node gets them only
// once no lease holds them, and a lease lets go only when its sandbox is known to be gone (its DEL
// applied by its node's agent, or its node's incarnation retired): the fence. The pool picks a
// reservation's address where no block covers it and packs reservations into the pool blocks
// already holding some; a block that holds a reservation is never handed to a node.
import { formatAddress, formatPrefix, parseAddress, usableRange, type Family } from './cidr';
import { freeBlock, type BlockTable } from './blocks';
import { DEFAULT_STICKY_KEEP_SECONDS, type PoolSpec } from './pool-spec';
import { naturalBlock, pinnedBlockOf, staticAddressProblem } from './static-addresses';

/** The annotation (pod, through its StatefulSet's template, or namespace) opting in: `"true"`. */
export const STICKY_ANNOTATION = 'netlease.io/sticky-addresses';

/** The reservations of a pool: key → its addresses and since when none of them is held. */
export interface Reservation {
  addresses: string[];
  /** Epoch ms at which the last of its pinned blocks came back to the pool; undefined: held. */
  idleSince?: number;
}
export type Reservations = Record<string, Reservation>;

export interface StickyPod {
  namespace: string;
  name: string;
  annotations?: Readonly<Record<string, string>>;
  /** The StatefulSet that controls the pod (its controller ownerReference), if one does. */
  statefulSet?: string;
}

/**
 * The pod's reservation key, or undefined when it is not sticky: a StatefulSet's pod whose name
 * ends in its ordinal, opted in by its own annotation, else its namespace's, else its pool
 * (`sticky` in the spec). `"false"` on the pod opts a sticky namespace's StatefulSet out.
 */
export function stickyKeyOf(
  pod: StickyPod,
  namespaceAnnotations: Readonly<Record<string, string>> | undefined,
  poolSticky: boolean,
): string | undefined {
  const said = pod.annotations?.[STICKY_ANNOTATION] ?? namespaceAnnotations?.[STICKY_ANNOTATION];
  const opted = said === undefined ? poolSticky : said.trim().toLowerCase() === 'true';
  if (!opted || !pod.statefulSet) return undefined;
  const ordinal = new RegExp(`^${escaped(pod.statefulSet)}-(0|[1-9][0-9]{0,8})$`).exec(pod.name)?.[1];
  return ordinal === undefined ? undefined : `${pod.namespace}/${pod.statefulSet}/${ordinal}`;
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Why a sticky address's new pod waits (the CNI error's message after `sticky-address-fenced: `). */
export const fenceMessage = (key: string, why: string): string =>
  `the address kept for StatefulSet pod ${key} waits for its earlier holder to let go ` +
  `(its sandbox removed by its node's agent, or its Node deleted): ${why}`;

/** The pool's blocks with each reserved address as a pinned block: what no hand-out may cover. */
export function heldWithReservations(blocks: BlockTable, reservations: Reservations | undefined): BlockTable {
  const reserved = Object.values(reservations ?? {}).flatMap((r) => r.addresses);
  if (reserved.length === 0) return blocks;
  const held: BlockTable = { ...blocks };
  for (const address of reserved) held[pinnedBlockOf(address)] ??= { node: '', incarnation: '' };
  return held;
}

/** The key an address is reserved for, if one. */
export function reservationOf(reservations: Reservations | undefined, address: string): string | undefined {
  return Object.entries(reservations ?? {}).find(([, r]) => r.addresses.includes(address))?.[0];
}

/**
 * An address of `family` for a new reservation: first in a pool block that holds reservations
 * already (lowest first), else the first one the pool could hand out of a block no node holds.
 */
export function stickyCandidate(
  blocks: BlockTable,
  reservations: Reservations | undefined,
  pool: PoolSpec,
  family: Family,
): string | undefined {
  const held = heldWithReservations(blocks, reservations);
  const reserved = Object.values(reservations ?? {})
    .flatMap((r) => r.addresses)
    .map(parseAddress)
    .filter((a) => a.family === family);
  const regions = new Map<string, bigint>();
  for (const a of reserved) {
    const block = naturalBlock(pool, family, a.value);
    if (block) regions.set(formatPrefix(block), block.network);
  }
  const ordered = [...regions.entries()].sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  for (const [region] of ordered) {
    const found = firstFreeIn(region, held, pool, family);
    if (found) return found;
  }
  const fresh = freeBlock(held, pool, family);
  return fresh === undefined ? undefined : firstFreeIn(fresh, held, pool, family);
}

/** The first address of the block the pool could hand out that is no held block's. */
function firstFreeIn(block: string, held: BlockTable, pool: PoolSpec, family: Family): string | undefined {
  const prefix = naturalBlock(pool, family, parseAddress(block.split('/')[0] ?? '').value);
  if (!prefix) return undefined;
  const { first, last } = usableRange(prefix);
  for (let value = first; value <= last; value++) {
    const address = formatAddress(family, value);
    if (held[pinnedBlockOf(address)] || staticAddressProblem(pool, address)) continue;
    return address;
  }
  return undefined;
}

/** The keys idle for longer than `keepMs` at `now`: their reservations end. */
export function expiredReservations(
  reservations: Reservations | undefined,
  keepMs: number,
  now: number,
): string[] {
  return Object.entries(reservations ?? {})
    .filter(([, r]) => r.idleSince !== undefined && r.idleSince + keepMs <= now)
    .map(([key]) => key);
}

/** When the next idle reservation expires (epoch ms); undefined: none is idle. */
export function nextExpiry(reservations: Reservations | undefined, keepMs: number): number | undefined {
  const idle = Object.values(reservations ?? {})
    .map((r) => r.idleSince)
    .filter((t): t is number => t !== undefined);
  return idle.length ? Math.min(...idle) + keepMs : undefined;
}

/** How long the pool keeps an idle reservation (ms). */
export const keepMsOf = (pool: PoolSpec): number =>
  (pool.sticky?.keepSeconds ?? DEFAULT_STICKY_KEEP_SECONDS) * 1000;

/** `<namespace>/<statefulset>` of a reservation key. */
export const statefulSetOfKey = (key: string): string => key.slice(0, key.lastIndexOf('/'));

/** The StatefulSets the reservations are for, each once. */
export const reservedStatefulSets = (reservations: Reservations | undefined): string[] => [
  ...new Set(Object.keys(reservations ?? {}).map(statefulSetOfKey)),
];

/**
 * The idle reservations of deleted StatefulSets: they end without waiting for the keep time. One
 * a pod still holds (its pod not yet collected) ends at a later sweep, once idle.
 */
export const idleOfDeleted = (reservations: Reservations | undefined, deleted: readonly string[]): string[] =>
  Object.entries(reservations ?? {})
    .filter(([key, r]) => r.idleSince !== undefined && deleted.includes(statefulSetOfKey(key)))
    .map(([key]) => key);
