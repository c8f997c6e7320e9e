// The machine's path to a local node's pods (tools/node-reach), without a cluster: a host
// namespace of the test's with a stand-in host end, whose host routes (the agent's, in a cluster)
// the machine must mirror, and the machine's routing decision read back with `ip route get` (never
// a packet: without the routes it would leave the machine). Everything added is removed by stop(),
// and what a killed run left by the next run's start.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { formatAddress, lastAddress, parsePrefix } from '../../domain/cidr';
import { ipJson, IpError } from '../../kernel/ip';
import { findLink, RouteEntrySchema } from '../../kernel/links';
import { PoolRangeTaken, RECORD_DIR, removeLeftovers } from '../../tools/machine-routes';
import { machineLinkOf, reachPods, type PodReach } from '../../tools/node-reach';
import { cmdlineOf, isAlive, stopPid } from '../../tools/processes';
import { deleteAllNetns, makeNetns, type TestNetns } from '../harness/netns';
import { randomPoolCidrs } from '../harness/pool-cidrs';
import { waitForValue } from '../harness/wait';

const HOST_END = 'nl0123456789abc'; // named as the agent names a pod's host end
const logged: string[] = [];
const log = (line: string) => logged.push(line);
afterAll(() => deleteAllNetns());

/** The machine's routing decision for `address`: the device it leaves by, or the refusal. */
async function machineRoute(address: string): Promise<{ dev?: string; unreachable?: string }> {
  try {
    const [route] = await ipJson(undefined, ['route', 'get', address], RouteEntrySchema);
    return { dev: route?.dev };
  } catch (err) {
    if (!(err instanceof IpError)) throw err;
    return { unreachable: err.stderr.replace(/^RTNETLINK answers: /, '').trim() };
  }
}

/** The routes the machine has at or inside `cidr` (its `unreachable` one, mirrored ones). */
const routesInside = (cidr: string) =>
  ipJson(undefined, [`-${cidr.includes(':') ? 6 : 4}`, 'route', 'show', 'root', cidr], RouteEntrySchema);

/** reachPods on a pool of the test's own, drawn again while another run holds one. */
async function reachOwnPool(hostNetns: string[]): Promise<{ reach: PodReach; cidrs: string[] }> {
  for (let attempt = 1; ; attempt++) {
    const cidrs = randomPoolCidrs();
    try {
      return { reach: await reachPods(hostNetns, cidrs, log), cidrs };
    } catch (err) {
      if (!(err instanceof PoolRangeTaken) || attempt === 5) throw err;
    }
  }
}

/** An address of `cidr` at `offset` from its start (or from its end when negative). */
function addressIn(cidr: string, offset: bigint): string {
  const prefix = parsePrefix(cidr);
  return formatAddress(prefix.family, offset < 0n ? lastAddress(prefix) + offset : prefix.network + offset);
}

/** A veth pair inside `host` whose one end is named as a pod's host end. */
async function standInHostEnd(host: TestNetns): Promise<void> {
  await host.run('ip', ['link', 'add', HOST_END, 'type', 'veth', 'peer', 'name', 'nlt-pod']);
  for (const name of [HOST_END, 'nlt-pod']) await host.run('ip', ['link', 'set', 'dev', name, 'up']);
}

const recordsOf = (link: string) =>
  existsSync(RECORD_DIR) ? readdirSync(RECORD_DIR).filter((f) => f === `${link}.json`) : [];

test('the machine routes what a host namespace routes to its host ends, nothing else; stop() removes it all', async () => {
  const host = await makeNetns('reach');
  await standInHostEnd(host);
  const { reach, cidrs } = await reachOwnPool([host.name]);
  const link = machineLinkOf(host.name);
  expect(reach.nodes.map((n) => n.link)).toEqual([link]);
  const [v4 = '', v6 = ''] = cidrs;
  const pods = [addressIn(v4, 5n), addressIn(v6, 5n)];
  // Outside the pool: never mirrored, though routed to a host end (added first, so any pass that
  // mirrors the pods' had it in view).
  await host.run('ip', ['route', 'replace', '10.77.0.5/32', 'dev', HOST_END]);
  for (const address of pods) await host.run('ip', ['route', 'replace', address, 'dev', HOST_END]);

  const decided = () => Promise.all(pods.map(machineRoute));
  await waitForValue(decided, (d) => d.every((r) => r.dev === link), 10_000, 100, 'the pods routed');
  const mirrored = await ipJson(undefined, ['route', 'show', 'dev', link], RouteEntrySchema);
  expect(mirrored.map((r) => r.dst)).toEqual([pods[0]]);
  const unheld = [addressIn(v4, -1n), addressIn(v6, -1n)];
  expect(await Promise.all(unheld.map(machineRoute))).toEqual(
    unheld.map(() => ({ unreachable: 'No route to host' })),
  );

  // The agent removes a host route: the machine's goes, and the address is unreachable again.
  await host.run('ip', ['route', 'del', `${pods[0]}/32`, 'dev', HOST_END]);
  await waitForValue(
    () => machineRoute(pods[0] ?? ''),
    (r) => r.unreachable === 'No route to host',
    10_000,
    100,
    `${pods[0]} unrouted`,
  );

  await reach.stop();
  expect(await findLink(undefined, link)).toBeUndefined();
  expect(await Promise.all(cidrs.map(routesInside))).toEqual([[], []]);
  expect(recordsOf(link)).toEqual([]);
  expect(logged.filter((line) => line.includes(host.name))).toEqual([]); // no pass failed
});

test('a pool CIDR another run routes is refused, and nothing is added for it', async () => {
  const [first, second] = [await makeNetns('reach'), await makeNetns('reach')];
  const { reach, cidrs } = await reachOwnPool([first.name]);
  try {
    await expect(reachPods([second.name], cidrs, log)).rejects.toThrow(PoolRangeTaken);
    expect(await findLink(undefined, machineLinkOf(second.name))).toBeUndefined();
    expect(recordsOf(machineLinkOf(second.name))).toEqual([]);
    // The first run's routes are as they were.
    expect((await Promise.all(cidrs.map(routesInside))).map((r) => r.map((e) => e.type))).toEqual([
      ['unreachable'],
      ['unreachable'],
    ]);
  } finally {
    await reach.stop();
  }
});

/** A process that runs reachPods for `hostNetns` and prints its pool once it is done; never stops. */
function startReachingProcess(hostNetns: string): Promise<{ pid: number; cidrs: string[] }> {
  const tools = join(__dirname, '..', '..', 'tools');
  const script = `
    const { reachPods } = require(${JSON.stringify(join(tools, 'node-reach.js'))});
    const { PoolRangeTaken } = require(${JSON.stringify(join(tools, 'machine-routes.js'))});
    const { randomPoolCidrs } = require(${JSON.stringify(join(__dirname, '..', 'harness', 'pool-cidrs.js'))});
    (async () => {
      for (;;) {
        const cidrs = randomPoolCidrs();
        try { await reachPods([${JSON.stringify(hostNetns)}], cidrs, () => {}); }
        catch (err) { if (err instanceof PoolRangeTaken) continue; throw err; }
        console.log(JSON.stringify(cidrs));
        setInterval(() => {}, 60000);
        return;
      }
    })();`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the reaching process exited (${code})`)));
    createInterface({ input: child.stdout }).once('line', (line) =>
      resolve({ pid: child.pid ?? 0, cidrs: JSON.parse(line) as string[] }),
    );
  });
}

test("a killed run's link, pool routes and monitor are removed by the next start", async () => {
  const host = await makeNetns('reach');
  const link = machineLinkOf(host.name);
  const killed = await startReachingProcess(host.name);
  const [record] = recordsOf(link);
  expect(record).toBe(`${link}.json`);
  process.kill(killed.pid, 'SIGKILL');
  await waitForValue(
    async () => isAlive(killed.pid),
    (alive) => !alive,
    10_000,
    50,
    'the run killed',
  );
  // Left behind: its link, its pool routes, its record, and its monitor still running.
  expect(await findLink(undefined, link)).toBeDefined();
  expect((await Promise.all(killed.cidrs.map(routesInside))).every((r) => r.length === 1)).toBe(true);
  const monitors = monitorsOf(host.name);
  expect(monitors).toHaveLength(1);

  await removeLeftovers(log); // what every start does first
  expect(await findLink(undefined, link)).toBeUndefined();
  expect(await Promise.all(killed.cidrs.map(routesInside))).toEqual([[], []]);
  expect(recordsOf(link)).toEqual([]);
  expect(monitors.filter(isAlive)).toEqual([]);
  for (const pid of monitors) await stopPid(pid); // none, unless the check above failed
});

/** PIDs of the `ip monitor` processes watching `hostNetns`. */
const monitorsOf = (hostNetns: string): number[] =>
  readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => cmdlineOf(pid).startsWith(`ip\0-n\0${hostNetns}\0monitor\0`));
