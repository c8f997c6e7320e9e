// The machine's own network namespace reaches each local node's pods, as a real node's namespace
// does (the kubelet's probes, host-network pods, `curl <pod ip>`), and nothing else of the pool.
// On a real node the host ends of the pods' veth pairs are in the node's namespace; here they are
// in the node agent's host namespace, so that netlease never touches the machine's links. Per node,
// a veth pair joins the machine to that namespace, and the machine routes each address the agent
// routes to a pod there (a /32 or /128 per pod, mirrored as the agent adds and removes its host
// routes) into it; every other address of the pool is `unreachable` in the machine
// (tools/machine-routes), so nothing addressed to a pod follows the default route off the machine.
//
// The machine end carries the node's IP (the kubelet serves on it, the apiserver reaches it there:
// exec, logs) and the source of the traffic into the pods, a link-local IPv4 and a ULA IPv6 the
// host namespace routes back. Pods reach only that source: the node IP is not routed to them.
// These addresses are the same on every run's links; each is local to the machine whichever link
// holds it, so parallel runs do not collide. The link's name is derived from the host namespace's.
import { createHash } from 'node:crypto';
import { parseAddress, parsePrefix, contains, type Prefix } from '../domain/cidr';
import { ip, ipJson } from '../kernel/ip';
import { ipBatch } from '../kernel/ip-batch';
import { deleteLink, RouteEntrySchema, type RouteEntry } from '../kernel/links';
import { isHostLinkName } from '../kernel/names';
import {
  claimPoolRanges,
  newRecord,
  refuseLiveOwner,
  removeLeftovers,
  removeRecorded,
} from './machine-routes';
import { startTracked, stopPid, type Tracked } from './processes';

/** The host namespace's end of every node's pair. */
export const HOST_LINK = 'nlmachine';
/** The machine end's addresses: the source of node → pod traffic, and the IPv6 next hop back. */
const MACHINE = { 4: '169.254.254.1', 6: 'fd00:6e6c::1', linkLocal: 'fe80::1' } as const;
/** The host end's: the next hop of the machine's routes to the pods. */
const HOST = { 4: '169.254.254.2', 6: 'fe80::2' } as const;
/** Node i's IP (not link-local: the kubelet refuses one), outside the pools npm start and tests use. */
export const nodeIpOf = (index: number): string => `198.19.255.${index + 1}`;

export interface NodeReach {
  hostNetns: string;
  /** The machine end of the pair, in the machine's namespace. */
  link: string;
  nodeIp: string;
}

export interface PodReach {
  /** In the order of the host namespaces given. */
  nodes: NodeReach[];
  /** The monitors stopped, the links deleted (their routes with them), the pool routes removed. */
  stop(): Promise<void>;
}

/** `nlm-` and 8 hex digits of the host namespace's name: at most 15 characters, never a host end's. */
export const machineLinkOf = (hostNetns: string): string =>
  `nlm-${createHash('sha256').update(hostNetns).digest('hex').slice(0, 8)}`;

/** The pair, its addresses, and in the host namespace the route back to the machine's source. */
async function joinMachine(node: NodeReach): Promise<void> {
  const { link, hostNetns } = node;
  await deleteLink(hostNetns, HOST_LINK); // a previous run's, whose machine end is gone
  await ip(undefined, ['link', 'add', link, 'type', 'veth', 'peer', 'name', HOST_LINK, 'netns', hostNetns]);
  await ip(undefined, ['link', 'set', 'dev', link, 'alias', `netlease: the pods of ${hostNetns}`]);
  await ipBatch(undefined, [
    ['addr', 'add', `${MACHINE[4]}/32`, 'dev', link],
    ['addr', 'add', `${node.nodeIp}/32`, 'dev', link],
    ['addr', 'add', `${MACHINE[6]}/128`, 'dev', link, 'nodad'],
    ['addr', 'add', `${MACHINE.linkLocal}/64`, 'dev', link, 'nodad'],
    ['link', 'set', 'dev', link, 'up'],
  ]);
  await ipBatch(hostNetns, [
    ['addr', 'add', `${HOST[4]}/32`, 'dev', HOST_LINK],
    ['addr', 'add', `${HOST[6]}/64`, 'dev', HOST_LINK, 'nodad'],
    ['link', 'set', 'dev', HOST_LINK, 'up'],
    ['route', 'replace', `${MACHINE[4]}/32`, 'dev', HOST_LINK, 'scope', 'link'],
    ['route', 'replace', `${MACHINE[6]}/128`, 'via', MACHINE.linkLocal, 'dev', HOST_LINK],
  ]);
}

const inPool = (pool: Prefix[], address: string) => {
  const { family, value } = parseAddress(address);
  return pool.some((prefix) => contains(prefix, family, value));
};

/** A host route the agent added (not the kernel's own for a gateway address on a host end). */
const isPodRoute = (route: RouteEntry): boolean =>
  !route.dst.includes('/') && !route.gateway && !route.type && route.protocol !== 'kernel';

/** The pod addresses the agent routes to a host end in `hostNetns` (its host routes). */
async function podAddresses(hostNetns: string, pool: Prefix[]): Promise<Set<string>> {
  const found = new Set<string>();
  for (const family of [4, 6] as const)
    for (const route of await ipJson(hostNetns, [`-${family}`, 'route', 'show'], RouteEntrySchema))
      if (route.dev && isHostLinkName(route.dev) && isPodRoute(route) && inPool(pool, route.dst))
        found.add(route.dst);
  return found;
}

/** The pod addresses the machine routes through `link` now. */
async function mirrored(link: string): Promise<Set<string>> {
  const found = new Set<string>();
  for (const family of [4, 6] as const)
    for (const route of await ipJson(
      undefined,
      [`-${family}`, 'route', 'show', 'dev', link],
      RouteEntrySchema,
    ))
      if (route.gateway === HOST[family] && !route.dst.includes('/')) found.add(route.dst);
  return found;
}

const routeToPod = (address: string, link: string): string[] =>
  address.includes(':')
    ? ['route', 'replace', `${address}/128`, 'via', HOST[6], 'dev', link, 'src', MACHINE[6]]
    : ['route', 'replace', `${address}/32`, 'via', HOST[4], 'dev', link, 'onlink', 'src', MACHINE[4]];

/** One pass: the machine routes through `link` exactly the pod addresses of its host namespace. */
async function syncNode(node: NodeReach, pool: Prefix[]): Promise<void> {
  const [wanted, held] = [await podAddresses(node.hostNetns, pool), await mirrored(node.link)];
  await ipBatch(
    undefined,
    [...wanted].filter((a) => !held.has(a)).map((a) => routeToPod(a, node.link)),
  );
  for (const address of [...held].filter((a) => !wanted.has(a))) {
    const prefix = address.includes(':') ? 128 : 32;
    // With its device: an address that moved to another node keeps that node's route.
    await ip(undefined, ['route', 'del', `${address}/${prefix}`, 'dev', node.link]).catch(() => undefined);
  }
}

interface Mirror {
  monitor: Tracked;
  /** The monitor's command line once it runs (what a leftover's must be to be stopped). */
  cmdline: string;
  stop(): Promise<void>;
}

/**
 * Keeps the machine's routes through `node.link` in step with the agent's host routes: `ip monitor
 * route` in the host namespace, each burst of events followed by one pass (never two at once).
 */
function mirrorNode(node: NodeReach, pool: Prefix[], log: (line: string) => void): Mirror {
  let running = false;
  let again = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let passing: Promise<void> = Promise.resolve();
  const pass = async () => {
    timer = undefined;
    if (running) return void (again = true);
    running = true;
    passing = runPasses();
    await passing;
  };
  const runPasses = async () => {
    try {
      do {
        again = false;
        if (!stopped) await syncNode(node, pool);
      } while (again);
    } catch (err) {
      log(`netlease: routes to the pods of ${node.hostNetns}: ${String(err)}`);
    } finally {
      running = false;
    }
  };
  // `ip -n`: one process whose command line names the namespace (nsenter would exec `ip` over it).
  const argv = ['ip', '-n', node.hostNetns, 'monitor', 'route'];
  const [command = '', ...args] = argv;
  const monitor = startTracked(command, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  monitor.child.stdout?.on('data', () => (timer ??= setTimeout(() => void pass(), 50)));
  void pass();
  return {
    monitor,
    cmdline: argv.map((a) => `${a}\0`).join(''),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await stopPid(monitor.pid);
      await passing; // a pass under way ends before the link it reads is deleted
    },
  };
}

/**
 * For the nodes whose agents use `hostNetns` (namespaces that exist): the pool's CIDRs claimed in
 * the machine (PoolRangeTaken if another run or network routes one), each namespace joined to the
 * machine, and the routes to its pods mirrored until `stop()`. What a crashed run left goes first.
 */
export async function reachPods(
  hostNetns: string[],
  poolCidrs: string[],
  log: (line: string) => void,
): Promise<PodReach> {
  await removeLeftovers(log);
  const nodes = hostNetns.map((ns, i) => ({ hostNetns: ns, link: machineLinkOf(ns), nodeIp: nodeIpOf(i) }));
  for (const node of nodes) refuseLiveOwner(node.link); // before our record could replace its
  const { record, save, remove } = newRecord(nodes[0]?.link ?? 'none');
  const mirrors: Mirror[] = [];
  const stop = async () => {
    for (const mirror of mirrors) await mirror.stop();
    await removeRecorded(record);
    remove();
  };
  try {
    save();
    await claimPoolRanges(poolCidrs, (cidr) => {
      record.unreachable.push(cidr);
      save();
    });
    const pool = poolCidrs.map((cidr) => parsePrefix(cidr));
    for (const node of nodes) {
      await deleteLink(undefined, node.link); // ours by name: a previous run's whose record is lost
      record.links.push(node.link);
      save();
      await joinMachine(node);
      const mirror = mirrorNode(node, pool, log);
      mirrors.push(mirror);
      record.monitors.push({ pid: mirror.monitor.pid, cmdline: mirror.cmdline });
      save();
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { nodes, stop };
}
