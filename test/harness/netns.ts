// Network namespaces a test makes itself (host side and pods), removed in afterAll. Every link
// and route a dataplane test touches lives in one of these, never in the machine's own.
import { randomBytes } from 'node:crypto';
import { ip, ipJson, netnsPath, runIn, type Netns } from '../../kernel/ip';
import { LinkSchema, routesOf, type Link, type RouteEntry } from '../../kernel/links';
import { isHostLinkName } from '../../kernel/names';
import { waitForValue } from './wait';

export interface TestNetns {
  name: string;
  path: string;
  links(): Promise<Link[]>;
  routes(family: 4 | 6, dev: string): Promise<RouteEntry[]>;
  run(file: string, args: string[]): Promise<string>;
}

const made = new Set<string>();

function wrap(name: string): TestNetns {
  return {
    name,
    path: netnsPath(name),
    links: () => ipJson(name, ['addr', 'show'], LinkSchema),
    routes: (family, dev) => routesOf(name, family, dev),
    run: (file, args) => runIn(name, file, args),
  };
}

/** A fresh namespace named `nlt-<prefix>-<hex>`, with its loopback up. */
export async function makeNetns(prefix: string): Promise<TestNetns> {
  const name = `nlt-${prefix}-${randomBytes(3).toString('hex')}`;
  await ip(undefined, ['netns', 'add', name]);
  made.add(name);
  await ip(name, ['link', 'set', 'dev', 'lo', 'up']);
  return wrap(name);
}

/** A fresh namespace of exactly this name (an agent pod's value names it), with its loopback up. */
export async function makeNamedNetns(name: string): Promise<TestNetns> {
  await ip(undefined, ['netns', 'add', name]);
  made.add(name);
  await ip(name, ['link', 'set', 'dev', 'lo', 'up']);
  return wrap(name);
}

/** The name only: a namespace the test creates later (the runtime is "still making it"). */
export function futureNetns(prefix: string): TestNetns & { create(): Promise<void> } {
  const name = `nlt-${prefix}-${randomBytes(3).toString('hex')}`;
  return {
    ...wrap(name),
    async create() {
      await ip(undefined, ['netns', 'add', name]);
      made.add(name);
    },
  };
}

export async function deleteNetns(ns: TestNetns): Promise<void> {
  await ip(undefined, ['netns', 'del', ns.name]).catch(() => undefined);
  made.delete(ns.name);
}

/** Removes every namespace this test file made; call from afterAll. */
export async function deleteAllNetns(): Promise<void> {
  for (const name of [...made]) await deleteNetns(wrap(name));
}

/** Links named like netlease host ends (`nl` + 13 hex digits). */
export const hostEnds = (links: Link[]): Link[] => links.filter((l) => isHostLinkName(l.ifname));

/** An echo from `from` (a namespace's name or path) to `address`, retried to a deadline (one may be lost). */
export const ping = (from: Netns, address: string, timeoutMs = 20_000): Promise<string> =>
  waitForValue(
    () => runIn(from, 'ping', ['-c', '1', '-W', '2', address]).catch((err: unknown) => String(err)),
    (out) => /1 packets transmitted, 1 received/.test(out),
    timeoutMs,
    500,
    `ping ${address} from ${from ?? "the machine's namespace"}`,
  );
