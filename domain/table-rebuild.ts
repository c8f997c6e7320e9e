// Rebuilding a table from what the rest of the system holds (issue 25 item 2). A node run that
// starts without its table (the run was terminated, or reset), and a pool run that starts
// without its blocks, must not hand out what a live lease or another node holds: the evidence is
// the open leases' own state (read by id and query) and the other tables, and it wins over what
// the table says. Pure: the workflows apply it, the activities gather the evidence.
import type { AllocationTable, Block } from './allocation';
import type { BlockTable } from './blocks';
import { blockLength, overlappingBlock } from './blocks';
import { contains, formatPrefix, netmask, parseAddress, parsePrefix } from './cidr';
import type { PoolSpec } from './config';
import { pinnedBlockOf } from './static-addresses';

/** An open lease of the node as it holds itself (its state query). */
export interface LeaseEvidence {
  owner: string;
  podUid: string;
  pool: string;
  /** The addresses it holds; empty while it is still producing (its allocation may be in flight). */
  addresses: string[];
  /** The ones it asked for by name (static, sticky): each came in its own pinned block. */
  asked?: string[];
}

/** A block a pool records as this node's. */
export interface BlockEvidence {
  pool: string;
  cidr: string;
  incarnation: string;
}

export interface NodeEvidence {
  pools: PoolSpec[];
  blocks: BlockEvidence[];
  leases: LeaseEvidence[];
  /** Owners in the table whose lease workflow is closed (collected elsewhere: issue 25 item 6). */
  closed: string[];
  /** The configured reuse cooldown: an address the rebuild takes from a stale entry cools down. */
  cooldownMs: number;
  /**
   * The run the evidence was gathered for, as its request named it: read back from the activity's
   * result, so a reset run replaying an earlier run's rebuild learns that it was not its own.
   */
  forRun?: string;
}

export interface RebuildReport {
  blocksAdded: string[];
  allocationsAdded: string[];
  /** An address the table gave one owner and a live lease holds: the lease keeps it. */
  reassigned: Array<{ address: string; from: string; to: string }>;
  /** Owners whose allocation the table dropped: their remembered answers must be forgotten. */
  dropped: string[];
  /**
   * Owners the table holds an allocation for again: a release they were answered before the
   * rebuild freed nothing the table now holds, so its remembered answer must be forgotten too.
   */
  restored: string[];
  /** Held twice by live holders: nothing can repair it here; said loudly. */
  duplicates: string[];
}

export interface NodeTableState {
  incarnation: string;
  pools: Record<string, PoolSpec>;
  tables: Record<string, AllocationTable>;
}

const emptyReport = (): RebuildReport => ({
  blocksAdded: [],
  allocationsAdded: [],
  reassigned: [],
  dropped: [],
  restored: [],
  duplicates: [],
});

const tableOf = (state: NodeTableState, pool: string): AllocationTable =>
  (state.tables[pool] ??= { blocks: [], allocations: {}, cooldowns: {} });

/** The block of `pool` an address falls in, as the pool would have cut it. */
export function blockOfAddress(pool: PoolSpec, address: string): string {
  const { family, value } = parseAddress(address);
  const length = blockLength(pool, family);
  return formatPrefix({ family, network: value & netmask(family, length), length });
}

/**
 * The block a live lease's address implies when no table holds one covering it: an address asked
 * for by name came in its own pinned block, so only that is claimed (the soak: a whole pool block
 * cut around a static address fenced the other static addresses in it, on other nodes, for good).
 */
export function impliedBlock(pool: PoolSpec, address: string, asked: readonly string[] = []): string {
  return asked.includes(address) ? pinnedBlockOf(address) : blockOfAddress(pool, address);
}

function addBlock(table: AllocationTable, block: Block, report: RebuildReport): void {
  const clash = overlappingBlock(
    table.blocks.map((b) => b.cidr),
    parsePrefix(block.cidr),
  );
  if (clash === block.cidr) return;
  if (clash) report.duplicates.push(`block ${block.cidr} overlaps ${clash} already in the table`);
  else {
    table.blocks.push(block);
    report.blocksAdded.push(block.cidr);
  }
}

function blockHolding(table: AllocationTable, address: string): Block | undefined {
  const { family, value } = parseAddress(address);
  return table.blocks.find((b) => contains(parsePrefix(b.cidr), family, value));
}

/**
 * Merges the evidence into the node's tables: the pools' blocks, then each live lease's
 * addresses (they win over the table), then the table's stale entries of live leases that hold
 * other addresses. Returns what changed. `now` + `cooldownMs`: a dropped address cools down.
 */
export function rebuildNodeTables(
  state: NodeTableState,
  evidence: NodeEvidence,
  now: number,
  cooldownMs: number,
): RebuildReport {
  const report = emptyReport();
  for (const spec of evidence.pools) state.pools[spec.name] = spec;
  for (const b of evidence.blocks) {
    const family = parsePrefix(b.cidr).family;
    addBlock(tableOf(state, b.pool), { cidr: b.cidr, family, incarnation: b.incarnation }, report);
  }
  // address → the live leases that hold it: two is a duplicate nobody here can undo.
  const claimants = new Map<string, LeaseEvidence[]>();
  for (const lease of evidence.leases)
    for (const a of lease.addresses)
      claimants.set(`${lease.pool}|${a}`, [...(claimants.get(`${lease.pool}|${a}`) ?? []), lease]);
  for (const [key, holders] of claimants) {
    const address = key.slice(key.indexOf('|') + 1);
    if (holders.length > 1)
      report.duplicates.push(`${address} is held by ${holders.map((h) => h.owner).join(' and ')}`);
    else if (holders[0]) restoreClaim(state, holders[0], address, report);
  }
  dropStale(state, evidence.leases, now, cooldownMs, report);
  return report;
}

function restoreClaim(
  state: NodeTableState,
  lease: LeaseEvidence,
  address: string,
  report: RebuildReport,
): void {
  const table = tableOf(state, lease.pool);
  let block = blockHolding(table, address);
  const spec = state.pools[lease.pool];
  if (!block && spec) {
    const cidr = impliedBlock(spec, address, lease.asked);
    addBlock(table, { cidr, family: parsePrefix(cidr).family, incarnation: state.incarnation }, report);
    block = blockHolding(table, address);
  }
  if (!block) {
    report.duplicates.push(`${lease.owner} holds ${address}, outside every block of the node`);
    return;
  }
  const existing = table.allocations[address];
  if (existing?.owner === lease.owner) return;
  if (existing) {
    report.reassigned.push({ address, from: existing.owner, to: lease.owner });
    report.dropped.push(existing.owner);
  } else report.allocationsAdded.push(address);
  if (!report.restored.includes(lease.owner)) report.restored.push(lease.owner);
  const { family } = parseAddress(address);
  table.allocations[address] = {
    address,
    family,
    block: block.cidr,
    owner: lease.owner,
    podUid: lease.podUid,
    incarnation: block.incarnation,
  };
  delete table.cooldowns[address];
}

/** Allocations of live leases that hold other addresses (they produced elsewhere, or later). */
function dropStale(
  state: NodeTableState,
  leases: LeaseEvidence[],
  now: number,
  cooldownMs: number,
  report: RebuildReport,
): void {
  const live = new Map(leases.map((l) => [l.owner, l]));
  for (const [pool, table] of Object.entries(state.tables)) {
    for (const [address, allocation] of Object.entries(table.allocations)) {
      const lease = live.get(allocation.owner);
      if (!lease || lease.addresses.length === 0) continue; // closed, or still producing
      if (lease.pool === pool && lease.addresses.includes(address)) continue;
      delete table.allocations[address];
      if (cooldownMs > 0) table.cooldowns[address] = now + cooldownMs;
      report.dropped.push(allocation.owner);
    }
  }
}

/** A block a node's table holds for this pool, or one implied by a live lease's address. */
export interface HeldBlockEvidence {
  cidr: string;
  node: string;
  incarnation: string;
}

/** What a pool's blocks are rebuilt from, and the run it was gathered for (as NodeEvidence). */
export interface PoolEvidence {
  held: HeldBlockEvidence[];
  forRun?: string;
  /** Sticky reservations of the leases that hold pinned addresses now (key → their addresses). */
  reservations?: Record<string, string[]>;
}

export interface PoolRebuildReport {
  added: string[];
  /** A block the pool gave another node than the one whose table holds it: the table wins. */
  reassigned: Array<{ block: string; from: string; to: string }>;
  duplicates: string[];
}

/** Merges the nodes' evidence into a pool's block table: what a node holds is that node's. */
export function rebuildBlockTable(blocks: BlockTable, evidence: HeldBlockEvidence[]): PoolRebuildReport {
  const report: PoolRebuildReport = { added: [], reassigned: [], duplicates: [] };
  const byBlock = new Map<string, HeldBlockEvidence[]>();
  for (const held of evidence) byBlock.set(held.cidr, [...(byBlock.get(held.cidr) ?? []), held]);
  for (const [cidr, holders] of byBlock) {
    const nodes = [...new Set(holders.map((h) => h.node))];
    const clash = overlappingBlock(Object.keys(blocks), parsePrefix(cidr));
    const owner = clash === undefined ? undefined : blocks[clash];
    if (nodes.length > 1) report.duplicates.push(`block ${cidr} is held by nodes ${nodes.join(' and ')}`);
    else if (clash !== undefined && clash !== cidr)
      report.duplicates.push(`block ${cidr} of node ${nodes[0] ?? ''} overlaps ${clash}`);
    else if (holders[0]) {
      const held = holders.find((h) => h.incarnation) ?? holders[0];
      if (!owner) report.added.push(cidr);
      else if (owner.node !== held.node)
        report.reassigned.push({ block: cidr, from: owner.node, to: held.node });
      else if (owner.incarnation && !held.incarnation) continue;
      blocks[cidr] = { node: held.node, incarnation: held.incarnation || owner?.incarnation || '' };
    }
  }
  return report;
}
