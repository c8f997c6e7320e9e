// The soak's second pool (issue 29 item 3): a pod annotation selects it, and its node selector
// takes zone b's nodes only; the answer history checks each pod got its pool's addresses.
import { contains, parseAddress, parsePrefix } from '../../domain/cidr';

export const SELECTED_POOL = 'soak-b';
export const SELECTED_POOL_CIDRS = ['198.20.0.0/22', 'fd00:20::/64'];
/** The node label SELECTED_POOL's node selector matches (`b`). */
export const ZONE_LABEL = 'soak.netlease.io/zone';

/** Whether an answered address (`a.b.c.d/len` or bare) is one of SELECTED_POOL's. */
export function inSelectedPool(answered: string): boolean {
  const address = parseAddress(answered.split('/')[0] ?? '');
  return SELECTED_POOL_CIDRS.some((cidr) => contains(parsePrefix(cidr), address.family, address.value));
}
