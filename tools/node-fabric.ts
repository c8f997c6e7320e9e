// The underlay between two real nodes of the local cluster: a veth pair joining their agents'
// host-side namespaces, and in each a route for every pool CIDR to the other end. It plays what a
// cloud VPC or BGP gives a real cluster (netlease hands out addresses; it does not route between
// nodes): each node's host routes to its own pods win over the pool route, so anything else of
// the pool goes to the other node. Two nodes only: with a third, a pool route has no one next hop.
import { ip } from '../kernel/ip';

const LINK = 'nlfabric';
/** Per family, the two ends' addresses: IPv4 link-local, IPv6 link-local set by hand. */
const ENDS: Record<4 | 6, [string, string]> = {
  4: ['169.254.255.1', '169.254.255.2'],
  6: ['fe80::1', 'fe80::2'],
};

const familyOf = (cidr: string): 4 | 6 => (cidr.includes(':') ? 6 : 4);

/** One end: its addresses, the link up, and each pool CIDR routed to the other end. */
async function configureEnd(ns: string, self: 0 | 1, poolCidrs: string[]): Promise<void> {
  await ip(ns, ['addr', 'add', `${ENDS[4][self]}/30`, 'dev', LINK]);
  await ip(ns, ['addr', 'add', `${ENDS[6][self]}/64`, 'dev', LINK, 'nodad']);
  await ip(ns, ['link', 'set', 'dev', LINK, 'up']);
  for (const cidr of poolCidrs) {
    const family = familyOf(cidr);
    const peer = ENDS[family][self === 0 ? 1 : 0];
    await ip(ns, [`-${family}`, 'route', 'replace', cidr, 'via', peer, 'dev', LINK]);
  }
}

/** Joins namespaces `a` and `b` (names or paths), replacing a link a previous run left. */
export async function linkNodes(a: string, b: string, poolCidrs: string[]): Promise<void> {
  for (const ns of [a, b]) await ip(ns, ['link', 'del', LINK]).catch(() => undefined);
  await ip(a, ['link', 'add', LINK, 'type', 'veth', 'peer', 'name', LINK, 'netns', b]);
  await configureEnd(a, 0, poolCidrs);
  await configureEnd(b, 1, poolCidrs);
}
