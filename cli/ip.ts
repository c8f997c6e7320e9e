// `netleasectl ip <address>`: who holds the address now and who held it before, from the node
// workflows' update events (allocate, release, loadAllocation) across their runs.
import { z } from 'zod';
import { contains, parseAddress, parsePrefix } from '../domain/cidr';
import { nodeAddressEvents, type AddressEvent } from '../temporal/histories';
import { describeLease, leaseExecutions } from '../temporal/visibility';
import type { NodeState } from '../workflows/node-messages';
import { argument, onlyOptions, positionals, type CommandLine } from './args';
import type { Context, Run } from './context';
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

interface Holding {
  owner: string;
  pod: string;
  node: string;
  allocated?: Date;
  released?: Date;
  how: string;
}

export function ipCommand(line: CommandLine): Run {
  onlyOptions(line, []);
  const [raw] = positionals(line, ['<address>']);
  const text = argument(AddressSchema, raw, '<address>');
  const parsed = parseAddress(text);
  return async (context: Context) => {
    const { client, taskQueue } = context;
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
      if (blocks.some((b) => contains(parsePrefix(b.cidr), parsed.family, parsed.value)))
        nodeNames.add(n.name);
    }
    const podOf = new Map(leases.map((l) => [l.workflowId, l.podRef]));
    const holdings: Holding[] = [];
    for (const node of [...nodeNames].sort()) {
      const events = (await nodeAddressEvents(client, node)).filter((e) => e.address === text);
      holdings.push(...holdingsOf(events, node));
    }
    for (const h of holdings) {
      if (!podOf.has(h.owner)) {
        podOf.set(h.owner, (await describeLease(client, taskQueue, h.owner))?.podRef ?? '');
      }
      h.pod = podOf.get(h.owner) ?? '';
    }
    const current = [...states.entries()].flatMap(([node, state]) =>
      Object.entries(state.tables).flatMap(([pool, t]) => {
        const a = t.allocations[text];
        const cooling = t.cooldowns[text];
        return a
          ? [
              {
                node,
                pool,
                owner: a.owner,
                pod: podOf.get(a.owner) ?? '',
                podUid: a.podUid,
                incarnation: a.incarnation,
              },
            ]
          : cooling && cooling > Date.now()
            ? [
                {
                  node,
                  pool,
                  owner: '',
                  pod: '',
                  podUid: '',
                  incarnation: '',
                  coolingUntil: new Date(cooling).toISOString(),
                },
              ]
            : [];
      }),
    );
    const value = {
      address: text,
      current,
      history: holdings.map((h) => ({ ...h, allocated: time(h.allocated), released: time(h.released) })),
    };
    emit(context.output, value, () => {
      const now = current.length
        ? current
            .map((c) =>
              c.owner
                ? `Held by ${c.owner} (pod ${c.pod || '?'}, uid ${c.podUid}) on node ${c.node}, pool ${c.pool}`
                : `Free, cooling down on node ${c.node} until ${'coolingUntil' in c ? c.coolingUntil : ''}`,
            )
            .join('\n')
        : 'Not held now';
      return `Address ${text}\n${now}\n\nHistory:\n${table(
        ['OWNER', 'POD', 'NODE', 'ALLOCATED', 'RELEASED', 'HOW'],
        holdings.map((h) => [h.owner, h.pod, h.node, time(h.allocated), time(h.released), h.how]),
      )}`;
    });
    return 0;
  };
}

/** Pairs each allocation with the release that ended it (repeated updates count once). */
function holdingsOf(events: AddressEvent[], node: string): Holding[] {
  const holdings: Holding[] = [];
  for (const e of events) {
    const open = holdings.find((h) => h.owner === e.owner && !h.released);
    if (e.kind === 'release') {
      if (open) open.released = e.at;
      else
        holdings.push({
          owner: e.owner,
          pod: '',
          node,
          released: e.at,
          how: 'release (allocation not in history)',
        });
    } else if (!open) {
      holdings.push({ owner: e.owner, pod: '', node, allocated: e.at, how: e.kind });
    }
  }
  return holdings;
}
