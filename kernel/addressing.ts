// Addresses and routes of a ptp attachment. Pod end: the lease's addresses (no prefix route),
// a link route to each gateway and the lease's routes via it. Host end: the gateways, and a
// host route to each pod address. Every command is a `replace`, so re-running converges.
import type { AddressGrant } from '../domain/allocation';
import { routeFamily, routeGateway, type Route } from '../domain/routes';
import { ip, runIn, type Netns } from './ip';

const hostPrefix = (family: 4 | 6): number => (family === 4 ? 32 : 128);
const dadOff = (family: 4 | 6): string[] => (family === 6 ? ['nodad'] : []);

export async function configurePodEnd(
  podNetns: string,
  ifName: string,
  addresses: AddressGrant[],
  routes: Route[],
): Promise<void> {
  await ip(podNetns, ['link', 'set', 'dev', ifName, 'up']);
  for (const a of addresses) {
    const cidr = `${a.address}/${a.prefixLength}`;
    await ip(podNetns, [
      `-${a.family}`,
      'addr',
      'replace',
      cidr,
      'dev',
      ifName,
      'noprefixroute',
      ...dadOff(a.family),
    ]);
    if (a.gateway) {
      const gw = `${a.gateway}/${hostPrefix(a.family)}`;
      await ip(podNetns, [`-${a.family}`, 'route', 'replace', gw, 'dev', ifName, 'scope', 'link']);
    }
  }
  for (const route of routes) {
    const gateway = routeGateway(route, addresses);
    const via = gateway ? ['via', gateway] : [];
    await ip(podNetns, [`-${routeFamily(route)}`, 'route', 'replace', route.dst, ...via, 'dev', ifName]);
  }
}

export async function configureHostEnd(
  host: Netns,
  hostName: string,
  addresses: AddressGrant[],
): Promise<void> {
  await ip(host, ['link', 'set', 'dev', hostName, 'up']);
  for (const a of addresses) {
    const prefix = hostPrefix(a.family);
    if (a.gateway) {
      await ip(host, [
        `-${a.family}`,
        'addr',
        'replace',
        `${a.gateway}/${prefix}`,
        'dev',
        hostName,
        ...dadOff(a.family),
      ]);
    }
    await ip(host, [`-${a.family}`, 'route', 'replace', `${a.address}/${prefix}`, 'dev', hostName]);
  }
}

/** Pods on one node reach each other through the host: forwarding on, written only if off. */
export async function enableForwarding(host: Netns, families: Array<4 | 6>): Promise<void> {
  const paths = families.map((f) =>
    f === 4 ? '/proc/sys/net/ipv4/ip_forward' : '/proc/sys/net/ipv6/conf/all/forwarding',
  );
  for (const path of paths) {
    if ((await runIn(host, 'cat', [path])).trim() !== '1') await runIn(host, 'tee', [path], '1');
  }
}
