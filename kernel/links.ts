// What `ip -json` reports about links, addresses and routes, as zod schemas.
import { z } from 'zod';
import { ip, ipJson, IpError, type Netns } from './ip';

const AddrInfoSchema = z
  .object({ family: z.string(), local: z.string(), prefixlen: z.number(), scope: z.string().optional() })
  .passthrough();

export const LinkSchema = z
  .object({
    ifindex: z.number(),
    ifname: z.string(),
    /** A veth's peer ifindex (in the peer's namespace). */
    link_index: z.number().optional(),
    address: z.string().optional(),
    flags: z.array(z.string()).default([]),
    operstate: z.string().optional(),
    addr_info: z.array(AddrInfoSchema).optional(),
    /** With `-d`: the link's type (`veth`, `bridge`, ...). */
    linkinfo: z.object({ info_kind: z.string().optional() }).passthrough().optional(),
  })
  .passthrough();
export type Link = z.infer<typeof LinkSchema>;

export const RouteEntrySchema = z
  .object({
    dst: z.string(),
    gateway: z.string().optional(),
    dev: z.string().optional(),
    /** Absent for unicast; `unreachable`, `blackhole`, `local`, ... */
    type: z.string().optional(),
    /** Who added it: `kernel` for an address's own route; absent for `boot` (ip's default). */
    protocol: z.string().optional(),
  })
  .passthrough();
export type RouteEntry = z.infer<typeof RouteEntrySchema>;

/** The link with its addresses and kind, or undefined when there is none of that name. */
export async function findLink(netns: Netns, name: string): Promise<Link | undefined> {
  try {
    const [link] = await ipJson(netns, ['-d', 'addr', 'show', 'dev', name], LinkSchema);
    return link;
  } catch (err) {
    if (err instanceof IpError && err.notFound) return undefined;
    throw err;
  }
}

export const isUp = (link: Link): boolean => link.flags.includes('UP');

/** Global addresses as `address/prefix`. */
export const globalAddresses = (link: Link): string[] =>
  (link.addr_info ?? [])
    .filter((a) => a.scope !== 'link' && a.scope !== 'host')
    .map((a) => `${a.local}/${a.prefixlen}`);

export async function routesOf(netns: Netns, family: 4 | 6, dev: string): Promise<RouteEntry[]> {
  return ipJson(netns, [`-${family}`, 'route', 'show', 'dev', dev], RouteEntrySchema);
}

/** Deletes a link; one that is already gone is fine. */
export async function deleteLink(netns: Netns, name: string): Promise<boolean> {
  try {
    await ip(netns, ['link', 'del', 'dev', name]);
    return true;
  } catch (err) {
    if (err instanceof IpError && err.notFound) return false;
    throw err;
  }
}
