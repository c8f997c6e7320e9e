// CNI results for a lease grant, in the version the runtime asked for.
import type { AddressGrant } from '../domain/allocation';
import type { ActivatedLinks } from '../domain/lease';
import type { Route } from '../domain/routes';

export interface CniInterface {
  name: string;
  mac?: string;
  sandbox?: string;
}

export interface CniIp {
  address: string;
  gateway?: string;
  interface?: number;
}

export interface CniResult {
  cniVersion: string;
  interfaces?: CniInterface[];
  ips: CniIp[];
  routes: Route[];
  dns: Record<string, never>;
}

/** With links (ptp mode) the result lists host and pod end; each IP is on the pod end (index 1). */
export function buildResult(
  cniVersion: string,
  addresses: AddressGrant[],
  routes: Route[],
  links?: ActivatedLinks,
): CniResult {
  const interfaces: CniInterface[] = links ? [links.host, links.container] : [];
  const interfaceIndex = links ? 1 : undefined;
  return {
    cniVersion,
    ...(interfaces.length ? { interfaces } : {}),
    ips: addresses.map((a) => ({
      address: `${a.address}/${a.prefixLength}`,
      ...(a.gateway ? { gateway: a.gateway } : {}),
      ...(interfaceIndex === undefined ? {} : { interface: interfaceIndex }),
    })),
    routes,
    dns: {},
  };
}

/** Results before 1.0.0 (0.3.x and 0.4.0) carry `version` on each IP; 1.0.0 removed it. */
export function convertResult(result: CniResult, cniVersion: string): Record<string, unknown> {
  if (!cniVersion.startsWith('0.')) return { ...result, cniVersion };
  return {
    ...result,
    cniVersion,
    ips: result.ips.map((ip) => ({ version: ip.address.includes(':') ? '6' : '4', ...ip })),
  };
}
