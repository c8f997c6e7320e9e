// CNI CHECK in ptp mode: the pod end in the netns, compared with what the lease says it must be.
import type { AddressGrant } from '../domain/allocation';
import { routeFamily, routeGateway, type Route } from '../domain/routes';
import { findLink, globalAddresses, isUp, routesOf } from './links';
import { attachmentLinkNames } from './names';
import { netnsExists } from './netns';

export interface ExpectedAttachment {
  containerId: string;
  netns: string;
  ifName: string;
  addresses: AddressGrant[];
  routes: Route[];
}

const routeKey = (dst: string, gw: string | undefined) =>
  `${dst === '0.0.0.0/0' || dst === '::/0' ? 'default' : dst} ${gw ?? ''}`;

/** What differs between the interface and the lease; empty when they agree. */
export async function attachmentDifferences(expected: ExpectedAttachment): Promise<string[]> {
  const { netns, ifName } = expected;
  if (!(await netnsExists(netns))) return [`network namespace ${netns} does not exist`];
  const link = await findLink(netns, ifName);
  if (!link) return [`${ifName} does not exist in ${netns}`];
  const problems: string[] = [];
  const mac = attachmentLinkNames(expected.containerId, ifName).containerMac;
  if (link.address !== mac) problems.push(`${ifName} has MAC ${link.address ?? 'none'}, expected ${mac}`);
  if (!isUp(link)) problems.push(`${ifName} is down`);
  const present = globalAddresses(link);
  for (const a of expected.addresses) {
    const cidr = `${a.address}/${a.prefixLength}`;
    if (!present.includes(cidr))
      problems.push(`${ifName} lacks address ${cidr} (has ${present.join(', ') || 'none'})`);
  }
  const families = [...new Set(expected.routes.map(routeFamily))];
  const installed = (await Promise.all(families.map((f) => routesOf(netns, f, ifName)))).flat();
  const keys = new Set(installed.map((r) => routeKey(r.dst, r.gateway)));
  for (const route of expected.routes) {
    const gw = routeGateway(route, expected.addresses);
    if (!keys.has(routeKey(route.dst, gw)))
      problems.push(`route ${route.dst} via ${gw ?? ifName} is missing`);
  }
  return problems;
}
