// The address-ownership invariant, as `netleasectl check` and the churn scenario test it: no address
// held by two owners, every allocation's owner an open lease, and each open lease's addresses
// allocated to it. Pure: the caller reads the node tables and the open leases.
import type { AllocationTable } from './allocation';

/** One node workflow's tables, as its state has them (pool → table). */
export interface NodeTables {
  node: string;
  tables: Record<string, AllocationTable>;
}

/** An open lease and the addresses it lists. */
export interface OpenLease {
  workflowId: string;
  addresses: string[];
}

export type OwnershipProblem = 'heldTwice' | 'ownerNotOpen' | 'claimedTwice' | 'notAllocated';

export interface OwnershipFinding {
  problem: OwnershipProblem;
  address: string;
  /** What is wrong, naming the address, its owners and their nodes. */
  message: string;
}

interface Holder {
  owner: string;
  node: string;
  pool: string;
}

function holdersByAddress(nodes: NodeTables[]): Map<string, Holder[]> {
  const holders = new Map<string, Holder[]>();
  for (const { node, tables } of nodes)
    for (const [pool, table] of Object.entries(tables))
      for (const { address, owner } of Object.values(table.allocations))
        holders.set(address, [...(holders.get(address) ?? []), { owner, node, pool }]);
  return holders;
}

function claimsByAddress(leases: OpenLease[]): Map<string, string[]> {
  const claims = new Map<string, string[]>();
  for (const lease of leases)
    for (const address of lease.addresses)
      claims.set(address, [...(claims.get(address) ?? []), lease.workflowId]);
  return claims;
}

/** How many allocations the tables hold (what a check read, so one that read nothing shows it). */
export const allocationCount = (nodes: NodeTables[]): number =>
  nodes.reduce(
    (sum, { tables }) =>
      sum + Object.values(tables).reduce((n, t) => n + Object.keys(t.allocations).length, 0),
    0,
  );

const finding = (problem: OwnershipProblem, address: string, message: string): OwnershipFinding => ({
  problem,
  address,
  message,
});

/** Addresses held more than once, over all nodes and pools. */
function heldTwice(holders: Map<string, Holder[]>): OwnershipFinding[] {
  return [...holders]
    .filter(([, held]) => held.length > 1)
    .map(([address, held]) =>
      finding(
        'heldTwice',
        address,
        `${address} is held ${held.length} times: ${held.map((h) => `${h.owner} (node ${h.node}, pool ${h.pool})`).join('; ')}`,
      ),
    );
}

/** Allocations whose owner is not an open lease. */
function ownersNotOpen(holders: Map<string, Holder[]>, open: Set<string>): OwnershipFinding[] {
  return [...holders].flatMap(([address, held]) =>
    held
      .filter((h) => !open.has(h.owner))
      .map((h) =>
        finding(
          'ownerNotOpen',
          address,
          `${address} on node ${h.node} is held by ${h.owner}, which is not an open lease`,
        ),
      ),
  );
}

/** Addresses two open leases list, and addresses a lease lists that no node has allocated to it. */
function claimsNotHeld(holders: Map<string, Holder[]>, claims: Map<string, string[]>): OwnershipFinding[] {
  return [...claims].flatMap(([address, owners]) => [
    ...(owners.length > 1
      ? [
          finding(
            'claimedTwice',
            address,
            `${address} is claimed by ${owners.length} open leases: ${owners.join(', ')}`,
          ),
        ]
      : []),
    ...owners
      .filter((owner) => !(holders.get(address) ?? []).some((h) => h.owner === owner))
      .map((owner) =>
        finding(
          'notAllocated',
          address,
          `${owner} lists ${address}, but no node has it allocated to that lease`,
        ),
      ),
  ]);
}

/**
 * What breaks the invariant. Without `openLeases` (a read of the tables alone) only addresses held
 * twice are found; with them, also owners that are not open leases and leases' addresses that are
 * claimed twice or not allocated to them.
 */
export function addressOwnershipFindings(nodes: NodeTables[], openLeases?: OpenLease[]): OwnershipFinding[] {
  const holders = holdersByAddress(nodes);
  if (!openLeases) return heldTwice(holders);
  const open = new Set(openLeases.map((l) => l.workflowId));
  return [
    ...ownersNotOpen(holders, open),
    ...heldTwice(holders),
    ...claimsNotHeld(holders, claimsByAddress(openLeases)),
  ];
}
