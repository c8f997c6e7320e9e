// `netleasectl ip <address> [--at <time>] [--history]`: who holds the address now and who held
// it before (or at one moment), from the node workflows' update events (allocate, release,
// loadAllocation) across their runs; each holder's sandboxes from its lease's ADDs.
import { z } from 'zod';
import { contains, parseAddress, parsePrefix } from '../domain/cidr';
import { historyRetentionMs, leaseSandboxes, nodeAddressEvents } from '../temporal/histories';
import { describeLease, leaseExecutions } from '../temporal/visibility';
import type { NodeState } from '../workflows/node-messages';
import { argument, onlyOptions, positionals, UsageError, type CommandLine } from './args';
import type { Context, Run } from './context';
import { heldAt, holdingsOf, MomentSchema, type Holding } from './ip-holders';
import { emit, table, time } from './output';
import { readNodes, readPools } from './nodes';

const AddressSchema = z.string().refine((text) => {
  try {
    parseAddress(text);
    return true;
  } catch {
    return false;
  }
}, 'not an IPv4 or IPv6 address');

export function ipCommand(line: CommandLine): Run {
  onlyOptions(line, ['at', 'history']);
  const [raw] = positionals(line, ['<address>']);
  const text = argument(AddressSchema, raw, '<address>');
  const at = line.values.at === undefined ? undefined : argument(MomentSchema, line.values.at, '--at');
  if (at && line.values.history) throw new UsageError('--at and --history: one or the other');
  return async (context: Context) => {
    const known = await readAddress(context, text);
    const holdings = await holdingsOfAddress(context, text, known);
    const horizon = await horizonOf(context);
    if (at) return answerAt(context, text, at, heldAt(holdings, at), horizon);
    if (line.values.history) return answerHistory(context, text, holdings, horizon);
    return answerNow(context, text, currentHolders(text, known), holdings);
  };
}

/** What the tables say of an address now: the node states whose blocks hold it, its leases' pods. */
interface KnownAddress {
  nodeNames: Set<string>;
  states: Map<string, NodeState>;
  podOf: Map<string, string>;
}

async function readAddress(context: Context, text: string): Promise<KnownAddress> {
  const { client, taskQueue } = context;
  const parsed = parseAddress(text);
  // The nodes that hand out or handed out this address: leases that carried it, and nodes whose
  // blocks contain it now.
  const leases = await leaseExecutions(client, taskQueue, { IPAddresses: text });
  const nodeNames = new Set(leases.map((l) => l.nodeName).filter(Boolean));
  // Visibility lags: the nodes the pools hand a block with this address to are read by their ids.
  const owners = (await readPools(context)).flatMap((p) =>
    Object.entries(p.state?.blocks ?? {})
      .filter(([block]) => contains(parsePrefix(block), parsed.family, parsed.value))
      .map(([, owner]) => owner.node),
  );
  const states = new Map<string, NodeState>();
  for (const n of await readNodes(context, owners)) {
    if (!n.state) continue;
    states.set(n.name, n.state);
    const blocks = Object.values(n.state.tables).flatMap((t) => t.blocks);
    if (blocks.some((b) => contains(parsePrefix(b.cidr), parsed.family, parsed.value))) nodeNames.add(n.name);
  }
  return { nodeNames, states, podOf: new Map(leases.map((l) => [l.workflowId, l.podRef])) };
}

/** Every holding of the address in the nodes' histories, with its pod and sandboxes. */
async function holdingsOfAddress(context: Context, text: string, known: KnownAddress): Promise<Holding[]> {
  const { client, taskQueue } = context;
  const holdings: Holding[] = [];
  for (const node of [...known.nodeNames].sort()) {
    const events = (await nodeAddressEvents(client, node)).filter((e) => e.address === text);
    holdings.push(...holdingsOf(events, node));
  }
  for (const h of holdings) {
    if (!known.podOf.has(h.owner))
      known.podOf.set(h.owner, (await describeLease(client, taskQueue, h.owner))?.podRef ?? '');
    h.pod = known.podOf.get(h.owner) ?? '';
    if (h.podUid) h.sandboxes = await leaseSandboxes(client, h.owner);
  }
  return holdings;
}

interface CurrentHolder {
  node: string;
  pool: string;
  owner: string;
  pod: string;
  podUid: string;
  incarnation: string;
  coolingUntil?: string;
}

/** The node tables' word now: allocated to an owner, or free and cooling down. */
function currentHolders(text: string, { states, podOf }: KnownAddress): CurrentHolder[] {
  return [...states.entries()].flatMap(([node, state]) =>
    Object.entries(state.tables).flatMap(([pool, t]): CurrentHolder[] => {
      const a = t.allocations[text];
      const cooling = t.cooldowns[text];
      if (a)
        return [
          {
            node,
            pool,
            owner: a.owner,
            pod: podOf.get(a.owner) ?? '',
            podUid: a.podUid,
            incarnation: a.incarnation,
          },
        ];
      if (!cooling || cooling <= Date.now()) return [];
      const coolingUntil = new Date(cooling).toISOString();
      return [{ node, pool, owner: '', pod: '', podUid: '', incarnation: '', coolingUntil }];
    }),
  );
}

function answerNow(context: Context, text: string, current: CurrentHolder[], holdings: Holding[]): number {
  emit(context.output, { address: text, current, history: holdings.map(holdingView) }, () => {
    const now = current.length
      ? current
          .map((c) =>
            c.owner
              ? `Held by ${c.owner} (pod ${c.pod || '?'}, uid ${c.podUid}) on node ${c.node}, pool ${c.pool}`
              : `Free, cooling down on node ${c.node} until ${c.coolingUntil ?? ''}`,
          )
          .join('\n')
      : 'Not held now';
    return `Address ${text}\n${now}\n\nHistory:\n${historyTable(holdings)}`;
  });
  return 0;
}

const holdingView = (h: Holding) => ({ ...h, allocated: time(h.allocated), released: time(h.released) });

function historyTable(holdings: Holding[]): string {
  return table(
    ['OWNER', 'POD', 'UID', 'NODE', 'SANDBOX', 'ALLOCATED', 'RELEASED', 'HOW'],
    holdings.map((h) => [
      h.owner,
      h.pod,
      h.podUid,
      h.node,
      h.sandboxes.map((s) => s.slice(0, 12)).join(','),
      time(h.allocated),
      time(h.released),
      h.how,
    ]),
  );
}

/** How far back the histories reach: closed runs are kept for the namespace's retention. */
interface Horizon {
  retentionHours?: number;
  /** Before this, a closed run's history may be gone (undefined: the server did not say). */
  since?: Date;
}

async function horizonOf(context: Context): Promise<Horizon> {
  const ms = await historyRetentionMs(context.client, context.settings.namespace);
  return ms === undefined ? {} : { retentionHours: ms / 3_600_000, since: new Date(Date.now() - ms) };
}

const horizonText = ({ retentionHours, since }: Horizon) =>
  since
    ? `Histories reach back to ${time(since)} (namespace retention ${retentionHours} h; docs/operating.md says how to keep longer).`
    : 'The server did not say its retention: older holders may be missing.';

/** `--at`: the holder at that moment; nobody, or unknown (exit 1) before the histories' horizon. */
function answerAt(context: Context, address: string, at: Date, holders: Holding[], horizon: Horizon): number {
  const unknown = holders.length === 0 && (!horizon.since || at < horizon.since);
  emit(
    context.output,
    { address, at: time(at), holders: holders.map(holdingView), unknown, reachesBack: time(horizon.since) },
    () => {
      const who = holders.length
        ? holders
            .map(
              (h) =>
                `Held by pod ${h.pod || '?'} (uid ${h.podUid || '?'}) on node ${h.node}, sandbox ${h.sandboxes.join(',') || '?'}: ` +
                `lease ${h.owner}, from ${time(h.allocated) || 'before the history'} to ${time(h.released) || 'now'}`,
            )
            .join('\n')
        : unknown
          ? 'Unknown: that is before the kept history, and no holder found'
          : 'Held by nobody';
      return `Address ${address} at ${time(at)}\n${who}\n${horizonText(horizon)}`;
    },
  );
  return unknown ? 1 : 0;
}

/** `--history`: every holder, oldest first, with from and to. */
function answerHistory(context: Context, address: string, holdings: Holding[], horizon: Horizon): number {
  emit(
    context.output,
    { address, history: holdings.map(holdingView), reachesBack: time(horizon.since) },
    () =>
      `Address ${address}: ${holdings.length} holders\n${historyTable(holdings)}\n${horizonText(horizon)}`,
  );
  return 0;
}
