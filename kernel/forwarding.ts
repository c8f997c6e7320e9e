// Pods on one node reach each other through the host: IP forwarding on in the host namespace.
// Reading the sysctl takes a process (nsenter + cat) per family, so a keeper checks each family
// at activation, then again only once RECHECK_MS have passed: something that turns forwarding
// off is undone by the first activation after that, as it was by the next one before.
import { runIn, type Netns } from './ip';

const RECHECK_MS = 60_000;

const sysctlPath = (family: 4 | 6): string =>
  family === 4 ? '/proc/sys/net/ipv4/ip_forward' : '/proc/sys/net/ipv6/conf/all/forwarding';

/** Written only if off. */
async function enableForwarding(host: Netns, family: 4 | 6): Promise<void> {
  const path = sysctlPath(family);
  if ((await runIn(host, 'cat', [path])).trim() !== '1') await runIn(host, 'tee', [path], '1');
}

/** `ensure(families)` turns forwarding on in `host` for each family not checked recently. */
export function forwardingKeeper(host: Netns): (families: Array<4 | 6>) => Promise<void> {
  const checkedAt = new Map<4 | 6, number>();
  const due = (family: 4 | 6) => Date.now() - (checkedAt.get(family) ?? -Infinity) >= RECHECK_MS;
  return async (families) => {
    await Promise.all(
      families.filter(due).map(async (family) => {
        await enableForwarding(host, family);
        checkedAt.set(family, Date.now());
      }),
    );
  };
}
