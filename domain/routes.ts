// Routes a lease hands out: configured ones, or a default route per family via the gateway.
import { z } from 'zod';
import type { AddressGrant } from './allocation';
import type { Family } from './cidr';
import { AddressText, CidrText } from './text-schemas';

export const RouteSchema = z.object({ dst: CidrText, gw: AddressText.optional() }).strict();
export type Route = z.infer<typeof RouteSchema>;

export function defaultRoutes(addresses: AddressGrant[]): Route[] {
  return addresses.flatMap((a) =>
    a.gateway ? [{ dst: a.family === 4 ? '0.0.0.0/0' : '::/0', gw: a.gateway }] : [],
  );
}

export const routeFamily = (route: Route): Family => (route.dst.includes(':') ? 6 : 4);

/** The next hop of a route: its own `gw`, else the gateway of the lease's address of its family. */
export const routeGateway = (route: Route, addresses: AddressGrant[]): string | undefined =>
  route.gw ?? addresses.find((a) => a.family === routeFamily(route))?.gateway;

export const routesFor = (addresses: AddressGrant[], configured: Route[] | undefined): Route[] =>
  configured ?? defaultRoutes(addresses);
