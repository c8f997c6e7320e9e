// Sampling who holds which address while a workload churns: every pod's status.podIPs, every open
// lease's addresses and the node table's allocations. Each round notes any address found twice; the
// loop paces itself (~every `everyMs`) and ends by itself when `done` holds or at its deadline.
import type { V1Pod } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { addressOwnershipFindings, type NodeTables } from '../../domain/address-ownership';
import type { LeaseState } from '../../domain/lease';

export interface AddressReaders {
  pods(): Promise<V1Pod[]>;
  /** Open lease workflows: id → state (closed ones may be omitted). */
  openLeases(): Promise<Map<string, LeaseState | undefined>>;
  nodeTables(): Promise<NodeTables[]>;
}

export interface AddressRound {
  at: number;
  pods: V1Pod[];
  leases: Map<string, LeaseState | undefined>;
}

/** Addresses listed by more than one owner (owner → its addresses). */
export function sharedAddresses(owners: [string, string[]][]): string[] {
  const seen = new Map<string, string>();
  const shared: string[] = [];
  for (const [owner, addresses] of owners)
    for (const address of new Set(addresses)) {
      const first = seen.get(address);
      if (first !== undefined && first !== owner) shared.push(`${address}: ${first} and ${owner}`);
      seen.set(address, owner);
    }
  return shared;
}

/** One round's duplicates: across pods, across unreleased open leases, in the node tables. */
async function round(readers: AddressReaders): Promise<{ round: AddressRound; problems: string[] }> {
  const [pods, leases, tables] = await Promise.all([
    readers.pods(),
    readers.openLeases(),
    readers.nodeTables(),
  ]);
  const podIps = pods.map((p): [string, string[]] => [
    `pod ${p.metadata?.name ?? ''} (${p.metadata?.uid ?? ''})`,
    (p.status?.podIPs ?? []).map((ip) => ip.ip),
  ]);
  const leaseAddresses = [...leases].flatMap(([id, state]): [string, string[]][] =>
    state && state.phase !== 'Released' ? [[id, state.addresses.map((a) => a.address)]] : [],
  );
  const problems = [
    ...sharedAddresses(podIps).map((s) => `two pods list ${s}`),
    ...sharedAddresses(leaseAddresses).map((s) => `two open leases list ${s}`),
    ...addressOwnershipFindings(tables).map((f) => f.message),
  ];
  return { round: { at: Date.now(), pods, leases }, problems };
}

/**
 * Rounds until `done(round)` holds (that round included) or `timeoutMs` passes; `observe` sees
 * every round. Returns the problems found and the number of rounds; `timedOut` if done never held.
 */
export async function sampleAddresses(
  readers: AddressReaders,
  observe: (round: AddressRound) => Promise<string[]>,
  done: (round: AddressRound) => boolean,
  { timeoutMs, everyMs = 200 }: { timeoutMs: number; everyMs?: number },
): Promise<{ problems: string[]; rounds: number; timedOut: boolean }> {
  const deadline = Date.now() + timeoutMs;
  const problems: string[] = [];
  let rounds = 0;
  for (;;) {
    const started = Date.now();
    const sampled = await round(readers);
    rounds++;
    const seen = await observe(sampled.round);
    problems.push(...[...sampled.problems, ...seen].map((p) => `round ${rounds}: ${p}`));
    if (done(sampled.round)) return { problems, rounds, timedOut: false };
    if (Date.now() >= deadline) return { problems, rounds, timedOut: true };
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, everyMs - (Date.now() - started))));
  }
}
