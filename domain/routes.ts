// Routes a lease hands out: configured ones, or a default route per family via the gateway.
import { z } from 'zod';
import type { AddressGrant } from './allocation';
import { AddressText, CidrText } from './config';

export const RouteSchema = z.object({ dst: CidrText, gw: AddressText.optional() }).strict();
export type Route = z.infer<typeof RouteSchema>;

export function defaultRoutes(addresses: AddressGrant[]): Route[] {
  return addresses.flatMap((a) =>
    a.gateway ? [{ dst: a.family === 4 ? '0.0.0.0/0' : '::/0', gw: a.gateway }] : [],
  );
}

export const routesFor = (addresses: AddressGrant[], configured: Route[] | undefined): Route[] =>
  configured ?? defaultRoutes(addresses);
