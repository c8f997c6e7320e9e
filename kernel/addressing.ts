// Addresses and routes of a ptp attachment. Pod end: the lease's addresses (no prefix route),
// a link route to each gateway and the lease's routes via it. Host end: the gateways, and a
// host route to each pod address. Every command is a `replace`, so re-running converges. Each
// end is one `ip -batch` (batch lines take no `-4`/`-6`: ip infers the family from the address).
import type { AddressGrant } from '../domain/allocation';
import { routeGateway, type Route } from '../domain/routes';
import type { Netns } from './ip';
import { ipBatch } from './ip-batch';

const hostPrefix = (family: 4 | 6): number => (family === 4 ? 32 : 128);
const dadOff = (family: 4 | 6): string[] => (family === 6 ? ['nodad'] : []);

function podEndCommands(ifName: string, addresses: AddressGrant[], routes: Route[]): string[][] {
  const commands = [['link', 'set', 'dev', ifName, 'up']];
  for (const a of addresses) {
    const cidr = `${a.address}/${a.prefixLength}`;
    commands.push(['addr', 'replace', cidr, 'dev', ifName, 'noprefixroute', ...dadOff(a.family)]);
    if (a.gateway) {
      const gw = `${a.gateway}/${hostPrefix(a.family)}`;
      commands.push(['route', 'replace', gw, 'dev', ifName, 'scope', 'link']);
    }
  }
  for (const route of routes) {
    const gateway = routeGateway(route, addresses);
    const via = gateway ? ['via', gateway] : [];
    commands.push(['route', 'replace', route.dst, ...via, 'dev', ifName]);
  }
  return commands;
}

function hostEndCommands(hostName: string, addresses: AddressGrant[]): string[][] {
  const commands = [['link', 'set', 'dev', hostName, 'up']];
  for (const a of addresses) {
    const prefix = hostPrefix(a.family);
    if (a.gateway) {
      const gw = `${a.gateway}/${prefix}`;
      commands.push(['addr', 'replace', gw, 'dev', hostName, ...dadOff(a.family)]);
    }
    commands.push(['route', 'replace', `${a.address}/${prefix}`, 'dev', hostName]);
  }
  return commands;
}

export async function configurePodEnd(
  podNetns: string,
  ifName: string,
  addresses: AddressGrant[],
  routes: Route[],
): Promise<void> {
  await ipBatch(podNetns, podEndCommands(ifName, addresses, routes));
}

export async function configureHostEnd(
  host: Netns,
  hostName: string,
  addresses: AddressGrant[],
): Promise<void> {
  await ipBatch(host, hostEndCommands(hostName, addresses));
}
