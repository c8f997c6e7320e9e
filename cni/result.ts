// CNI results for a lease grant, in the version the runtime asked for.
import type { AddressGrant } from '../domain/allocation';
import type { Route } from './netconf';

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

export function defaultRoutes(addresses: AddressGrant[]): Route[] {
  return addresses.flatMap((a) =>
    a.gateway ? [{ dst: a.family === 4 ? '0.0.0.0/0' : '::/0', gw: a.gateway }] : [],
  );
}

export function buildResult(
  cniVersion: string,
  addresses: AddressGrant[],
  routes: Route[] | undefined,
  interfaces: CniInterface[] = [],
  interfaceIndex?: number,
): CniResult {
  return {
    cniVersion,
    ...(interfaces.length ? { interfaces } : {}),
    ips: addresses.map((a) => ({
      address: `${a.address}/${a.prefixLength}`,
      ...(a.gateway ? { gateway: a.gateway } : {}),
      ...(interfaceIndex === undefined ? {} : { interface: interfaceIndex }),
    })),
    routes: routes ?? defaultRoutes(addresses),
    dns: {},
  };
}

/** 0.3.x results carry `version` on each IP; 0.4.0 and later do not. */
export function convertResult(result: CniResult, cniVersion: string): Record<string, unknown> {
  if (!cniVersion.startsWith('0.3.')) return { ...result, cniVersion };
  return {
    ...result,
    cniVersion,
    ips: result.ips.map((ip) => ({ version: ip.address.includes(':') ? '6' : '4', ...ip })),
  };
}
