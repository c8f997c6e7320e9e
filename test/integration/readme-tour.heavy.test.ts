// The README's five-minute tour, run as written: `npm start`'s launcher (dist/tools/start.js) in a
// state directory of its own, then each step's `sh` commands read from README.md, in order, each
// checked against what the step's prose says. A command the test does not know fails the step,
// as does a known one the README no longer runs. The launcher is isolated like npm-start.test's:
// NETLEASE_STATE_DIR, NETLEASE_CONFIG (its Temporal on a free port, no metrics port, a shorter
// activation policy), NETLEASE_NODE_AGENT_CONFIG (its host namespace, CNI socket, DEL queue and
// offers here) and NETLEASE_UI_PORT; its kube-apiserver and etcd take free ports.
//
// The substitutions the README leaves to the reader, and all the test makes (see `substitute`):
//   `.netlease/…` and `$PWD/.netlease/…`  → this run's state directory
//   the network namespace `broken`        → a unique nlt-broken-<hex>
//   `<hash>`                              → from the `ctr-cnitool-<hash>` row `leases` printed
//   the printed ADD's `deploy/dev/netconf.json` → the same network config pointed at this run
//     (its Temporal address and the agent's socket and DEL queue)
// and the environment: NETLEASE_STATE_DIR (demo-pod finds the cluster there) and NETLEASE_UI
// (netleasectl's links point at this run's UI).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { NodeAgentConfigSchema } from '../../domain/config';
import { leasePodUid } from '../../domain/ids';
import { LinkSchema, globalAddresses } from '../../kernel/links';
import { ipJson } from '../../kernel/ip';
import { connectClient } from '../../temporal/connection';
import { describeLease, leaseExecutions } from '../../temporal/visibility';
import {
  freePort,
  isAlive,
  runToEnd,
  startTracked,
  stopPid,
  type Finished,
  type Tracked,
} from '../../tools/processes';
import { loadConfigFile } from '../../worker/config-file';
import { CniResultSchema } from '../harness/cni-result';
import { cnitoolContainerId } from '../harness/cnitool';
import { currentDetails } from '../harness/history';
import { deleteAllNetns, deleteNetns, futureNetns, makeNetns } from '../harness/netns';
import { replayTaskQueue } from '../harness/replay';
import { joinContinued, shellWords, tourSteps, type TourStep } from '../harness/readme-tour';
import { waitForValue } from '../harness/wait';

const ROOT = join(__dirname, '..', '..', '..');
const START = join(ROOT, 'dist', 'tools', 'start.js');
const steps = tourSteps(readFileSync(join(ROOT, 'README.md'), 'utf8'));
const dir = mkdtempSync(join(tmpdir(), 'netlease-tour-'));
const stateDir = join(dir, 'state');
const TASK_QUEUE = 'netlease-control';
const broken = futureNetns('broken');
const tracked: number[] = [];
let launcher: Tracked;
let launcherOut = '';
let ui = '';
let client: Client;
let env: Record<string, string | undefined>;
let netconf = '';

/** The tour's run: what one step leaves to the next. */
const tour = { demoUid: '', hash: '', cnitoolAdds: 0 };
const demoLease = () => `lease/${tour.demoUid}/eth0`;
const cnitoolLease = leaseIdOf(broken.path);

function leaseIdOf(netnsPath: string): string {
  return `lease/${leasePodUid(undefined, cnitoolContainerId(netnsPath))}/eth0`;
}

beforeAll(async () => {
  const temporalPort = await freePort();
  const uiPort = await freePort();
  const agentFiles = { cniSocket: join(dir, 'cni.sock'), deleteQueue: join(dir, 'del-queue') };
  const host = await makeNetns('host');
  writeConfigs(temporalPort, host.name, agentFiles);
  netconf = writeNetconf(temporalPort, agentFiles);
  launcher = startTracked(process.execPath, [START], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...withoutKubeconfig(process.env),
      NETLEASE_STATE_DIR: stateDir,
      NETLEASE_CONFIG: join(dir, 'netlease.json'),
      NETLEASE_NODE_AGENT_CONFIG: join(dir, 'node-agent.json'),
      NETLEASE_UI_PORT: String(uiPort),
    },
  });
  tracked.push(launcher.pid);
  for (const stream of [launcher.child.stdout, launcher.child.stderr])
    stream?.on('data', (chunk: Buffer) => (launcherOut += chunk.toString()));
  await waitForValue(
    async () => (launcher.child.exitCode === null ? launcherOut : `exited: ${launcherOut}`),
    (out) => out.includes('\nnetlease is running.\n') || out.startsWith('exited'),
    180_000,
    250,
    'npm start to say "netlease is running."',
  ).then((out) => expect(out).not.toMatch(/^exited/));
  tracked.push(...recordedPids());
  ui = `http://127.0.0.1:${uiPort}`;
  env = { ...withoutKubeconfig(process.env), NETLEASE_STATE_DIR: stateDir, NETLEASE_UI: ui };
  client = await connectClient(loadConfigFile(join(stateDir, 'netlease.effective.json')).temporal);
}, 240_000);

afterAll(async () => {
  await client?.connection.close();
  for (const pid of tracked) await stopPid(pid); // the launcher first: it stops its own
  await deleteNetns(broken);
  await deleteAllNetns();
  rmSync(dir, { recursive: true, force: true });
}, 120_000);

/** The PIDs npm start records as its own (.netlease/pids.json). */
const recordedPids = (): number[] =>
  (JSON.parse(readFileSync(join(stateDir, 'pids.json'), 'utf8')) as { pids: number[] }).pids;

function withoutKubeconfig(given: NodeJS.ProcessEnv): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(given).filter(([name]) => name !== 'KUBECONFIG'));
}

/** npm start's own configs, moved off every shared port, path and name. */
function writeConfigs(temporalPort: number, hostNetns: string, agentFiles: Record<string, string>): void {
  const address = `127.0.0.1:${temporalPort}`;
  const control = loadConfigFile(join(ROOT, 'deploy', 'dev', 'netlease.yaml'));
  // The README's "about 15 s" is the dev policy (1 s doubling to 10 s, 5 attempts); this one parks
  // in about 2 s, the same five attempts.
  const activation = { initialIntervalSeconds: 0.2, maximumIntervalSeconds: 1, maximumAttempts: 5 };
  const controlConfig = {
    ...control,
    metrics: undefined,
    temporal: { ...control.temporal, address },
    activation,
  };
  writeFileSync(join(dir, 'netlease.json'), JSON.stringify(controlConfig));
  const agent = loadConfigFile(join(ROOT, 'deploy', 'dev', 'node-agent.yaml'), NodeAgentConfigSchema);
  const agentConfig = {
    ...agent,
    metrics: undefined, // JSON leaves it out: no metrics port
    ...agentFiles,
    temporal: { ...agent.temporal, address },
    hostNetns,
    offerDir: join(dir, 'offers'),
  };
  writeFileSync(join(dir, 'node-agent.json'), JSON.stringify(agentConfig));
}

/** deploy/dev/netconf.json pointed at this run. */
function writeNetconf(temporalPort: number, agentFiles: Record<string, string>): string {
  const given = JSON.parse(readFileSync(join(ROOT, 'deploy', 'dev', 'netconf.json'), 'utf8')) as {
    temporal: Record<string, string>;
  };
  const path = join(dir, 'netconf.json');
  const { cniSocket, deleteQueue } = agentFiles;
  const temporal = { ...given.temporal, address: `127.0.0.1:${temporalPort}` };
  writeFileSync(path, JSON.stringify({ ...given, temporal, agentSocket: cniSocket, deleteQueue }));
  return path;
}

/** Every substitution of a command's word (see the header). */
function substitute(word: string): string {
  if (word === 'broken') return broken.name;
  return word
    .replace(/^\/var\/run\/netns\/broken$/, broken.path)
    .replace(/<hash>/g, () => {
      if (!tour.hash) throw new Error('<hash> before a leases row named ctr-cnitool-<hash>');
      return tour.hash;
    })
    .split(`${ROOT}/.netlease`)
    .join(stateDir)
    .replace(/^\.netlease(?=\/)/, stateDir);
}

const ok = (ran: Finished) =>
  expect({ code: ran.exitCode, stderr: ran.stderr }).toEqual({ code: 0, stderr: '' });

/** The programs a tour command may run, and how. */
async function run(words: string[]): Promise<Finished> {
  const [program, ...args] = words;
  if (program === 'export') {
    for (const assignment of args) {
      const [name, ...value] = assignment.split('=');
      if (!name || value.length === 0) throw new Error(`export of no value: ${assignment}`);
      env[name] = value.join('=');
    }
    return { exitCode: 0, stdout: '', stderr: '' };
  }
  const script = args[0] ?? '';
  const scripts = ['dist/tools/demo-pod.js', 'dist/cli/netleasectl.js'];
  if (program === 'node' && scripts.includes(script))
    return runToEnd(process.execPath, args, { env, cwd: ROOT, timeoutMs: 60_000 });
  if (program === 'ip' || program === 'cnitool')
    return runToEnd(program, args, { env, cwd: ROOT, timeoutMs: 60_000 });
  throw new Error(`the tour runs ${words.join(' ')}: this test does not know how to run it`);
}

type Check = (ran: Finished) => Promise<void>;

/**
 * Runs a step's commands in order, each followed by its check (keyed by the command as written).
 * A command without a check, or a check without its command, fails the step.
 */
async function runStep(number: number, checks: Record<string, Check>): Promise<void> {
  const step = steps.find((s) => s.number === number) as TourStep;
  expect(step).toBeDefined();
  const unknown = step.commands.filter((line) => !checks[line]);
  expect({ step: step.title, unknown }).toEqual({ step: step.title, unknown: [] });
  expect([...new Set(step.commands)].sort()).toEqual(Object.keys(checks).sort());
  for (const line of step.commands) {
    const words = shellWords(line, { ...env, PWD: ROOT }).map(substitute);
    const ran = await run(words);
    await (checks[line] as Check)(ran);
  }
}

const phaseOf = async (id: string) => {
  const lease = await describeLease(client, TASK_QUEUE, id);
  return { phase: lease?.phase, addresses: lease?.addresses ?? [], closed: lease?.open === false };
};
const untilPhase = (id: string, phase: string) =>
  waitForValue(
    () => phaseOf(id),
    (l) => l.phase === phase,
    30_000,
    200,
    `${id} in ${phase}`,
  );

/** The ADD demo-pod printed, as printed, with its network config pointed at this run. */
async function printedAdd(printed: string): Promise<Finished> {
  const command = joinContinued(printed.slice(printed.indexOf('Call the shim:') + 'Call the shim:'.length));
  const words = shellWords(command, {});
  const assignments = words.filter((w) => /^[A-Z_]+=/.test(w));
  const [shim, redirect, file, ...rest] = words.slice(assignments.length);
  expect({ shim, redirect, file, rest }).toEqual({
    shim: './bin/netlease',
    redirect: '<',
    file: 'deploy/dev/netconf.json',
    rest: [],
  });
  const cniEnv = Object.fromEntries(
    assignments.map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]),
  );
  const input = readFileSync(netconf, 'utf8');
  return runToEnd(shim as string, [], {
    env: { PATH: env.PATH, ...cniEnv },
    input,
    cwd: ROOT,
    timeoutMs: 60_000,
  });
}

const demo = 'node dist/tools/demo-pod.js';
const ctl = 'node dist/cli/netleasectl.js --config .netlease/netlease.effective.json';
const cnitoolAdd = 'cnitool add netlease-ptp /var/run/netns/broken';
const uiLink = (id: string) => `${ui}/namespaces/default/workflows/${encodeURIComponent(id)}`;
const sixSteps = steps.map((s) => s.number);

test('the README has the six steps of the tour', () => {
  expect(sixSteps).toEqual([1, 2, 3, 4, 5, 6]);
});

test('1. Start it: npm start prints the UI, registers this machine in a local kube-apiserver, runs the workers', async () => {
  const step = steps[0] as TourStep;
  expect(step.text).toContain('`npm start`');
  const readmeUi = /<(http:\/\/127\.0\.0\.1:8233\/namespaces\/default\/workflows)>/.exec(step.text)?.[1];
  expect(readmeUi).toBeDefined();
  const printedUi = (readmeUi as string).replace('http://127.0.0.1:8233', ui);
  expect(launcherOut).toContain(`Temporal UI:  ${printedUi}\n`);
  expect((await fetch(printedUi)).status).toBe(200);
  expect(launcherOut).toMatch(/Kubernetes: {3}\S+\/kube\/kubeconfig \(node \S+ registered\)/);
  const workersStarted = (out: string) =>
    /control info {2}control worker started/.test(out) && /node-agent info {2}node agent started/.test(out);
  await waitForValue(async () => launcherOut, workersStarted, 60_000, 200, 'both workers to log "started"');
});

test('2. A pod: its lease is Produced at once, the printed ADD makes it Active, Running follows the pod', async () => {
  await runStep(2, {
    [`${demo} create demo`]: async (ran) => {
      ok(ran);
      tour.demoUid = /^pod default\/demo uid (\S+) on node /.exec(ran.stdout)?.[1] ?? '';
      expect(tour.demoUid).not.toBe('');
      const produced = await untilPhase(demoLease(), 'Produced');
      expect(produced.addresses).toHaveLength(2);
      const add = await printedAdd(ran.stdout);
      ok(add);
      const result = CniResultSchema.parse(JSON.parse(add.stdout));
      expect(result.ips.map((i) => i.address.split('/')[0])).toEqual(produced.addresses);
      expect(result.ips.map((i) => (i.address.includes(':') ? 6 : 4))).toEqual([4, 6]);
      await untilPhase(demoLease(), 'Active');
    },
    [`${demo} running demo`]: async (ran) => {
      ok(ran);
      await untilPhase(demoLease(), 'Running');
    },
  });
});

test('3. Its lease in the UI: found by PodRef and LeasePhase, current details in one line, the state query', async () => {
  const byPod = await leaseExecutions(client, TASK_QUEUE, { PodRef: 'default/demo' });
  expect(byPod.map((l) => l.workflowId)).toEqual([demoLease()]);
  const running = await leaseExecutions(client, TASK_QUEUE, { LeasePhase: 'Running' });
  expect(running.map((l) => l.workflowId)).toEqual([demoLease()]);
  expect((await fetch(uiLink(demoLease()))).status).toBe(200);
  const details = await currentDetails(client, demoLease());
  expect(details).toMatch(/^[^\n]+$/);
  const state = await client.workflow.getHandle(demoLease()).query<{ phase: string }>('state');
  expect(state.phase).toBe('Running');
});

test('4. netleasectl: leases, lease and check name the pod and its lease', async () => {
  await runStep(4, {
    [`${ctl} leases`]: async (ran) => {
      ok(ran);
      const row = ran.stdout.split('\n').find((line) => line.startsWith('default/demo '));
      expect(row).toMatch(/ eth0 +\S+ +Running /);
      expect(row).toContain(uiLink(demoLease()));
    },
    [`${ctl} lease default/demo`]: async (ran) => {
      ok(ran);
      expect(ran.stdout).toContain(`Lease:          ${demoLease()}\n`);
      expect(ran.stdout).toContain(`Pod:            default/demo (uid ${tour.demoUid})\n`);
      const history = ran.stdout.slice(ran.stdout.indexOf('Phase history:'));
      const phases = [...history.matchAll(/^\S+Z {2}(\w+) /gm)].map((m) => m[1]);
      expect(phases.filter((p) => ['Produced', 'Active', 'Running'].includes(p ?? ''))).toEqual([
        'Produced',
        'Active',
        'Running',
      ]);
    },
    [`${ctl} check`]: async (ran) => {
      ok(ran);
      expect(ran.stdout).toContain('checked pods: 1 open leases checked against 1 pods');
      expect(ran.stdout).toContain('OK: no problems found');
    },
  });
});

test('5. A foreign eth0 parks the cnitool lease (error 11); after the fix, retry and the next ADD succeed', async () => {
  await runStep(5, {
    'export NETCONFPATH=$PWD/.netlease/cni/net.d CNI_PATH=$PWD/.netlease/cni/bin PATH=$PWD/.netlease/cni/bin:$PATH':
      async () => {
        expect([env.NETCONFPATH, env.CNI_PATH]).toEqual([
          join(stateDir, 'cni', 'net.d'),
          join(stateDir, 'cni', 'bin'),
        ]);
      },
    'ip netns add broken': async (ran) => ok(ran),
    'ip -n broken link add eth0 type veth peer name other0': async (ran) => ok(ran),
    [cnitoolAdd]: async (ran) => {
      tour.cnitoolAdds++;
      if (tour.cnitoolAdds === 1) await parked(ran);
      else await added(ran);
    },
    [`${ctl} leases --phase ActivationFailed`]: async (ran) => {
      ok(ran);
      const rows = ran.stdout.split('\n').slice(1).filter(Boolean);
      expect(rows).toHaveLength(1);
      tour.hash = /^ctr-cnitool-([0-9a-f]+) +eth0 .* ActivationFailed /.exec(rows[0] ?? '')?.[1] ?? '';
      expect(`lease/ctr-cnitool-${tour.hash}/eth0`).toBe(cnitoolLease);
    },
    'ip -n broken link del eth0': async (ran) => ok(ran),
    [`${ctl} retry lease/ctr-cnitool-<hash>/eth0`]: async (ran) => {
      ok(ran);
      expect(ran.stdout).toMatch(new RegExp(`^retry sent to ${cnitoolLease}: 1 parked attachment`));
    },
  });
  expect(tour.cnitoolAdds).toBe(2);
});

/** The first ADD: refused with CNI error 11, the lease parked with its addresses, its cause shown. */
async function parked(ran: Finished): Promise<void> {
  expect(ran.exitCode).not.toBe(0);
  expect(ran.stderr).toContain('activation failed');
  const lease = await untilPhase(cnitoolLease, 'ActivationFailed');
  expect(lease.addresses).toHaveLength(2);
  expect(launcherOut).toMatch(new RegExp(`cni call failed verb=ADD leaseId=${cnitoolLease} .*code=11 `));
  const details = await currentDetails(client, cnitoolLease);
  expect(details).toContain("exists and is not netlease's");
  expect(details).toContain('retry');
}

/** The ADD after the retry: a ptp result whose addresses are on eth0 in the namespace. */
async function added(ran: Finished): Promise<void> {
  ok(ran);
  const result = CniResultSchema.parse(JSON.parse(ran.stdout));
  expect(result.cniVersion).toBe('1.1.0');
  const addresses = result.ips.map((i) => i.address);
  expect(addresses.map((a) => (a.includes(':') ? 6 : 4))).toEqual([4, 6]);
  const [eth0] = await ipJson(broken.name, ['addr', 'show', 'dev', 'eth0'], LinkSchema);
  expect(eth0 && globalAddresses(eth0)).toEqual(addresses);
  expect((await untilPhase(cnitoolLease, 'Active')).addresses).toEqual(addresses.map((a) => a.split('/')[0]));
}

test('6. Clean up: both leases Released, the namespace gone; Ctrl-C stops everything npm start started', async () => {
  await runStep(6, {
    [`${demo} delete demo`]: async (ran) => {
      ok(ran);
      expect(await untilPhase(demoLease(), 'Released')).toMatchObject({ closed: true });
    },
    'cnitool del netlease-ptp /var/run/netns/broken': async (ran) => {
      ok(ran);
      expect(await ipJson(broken.name, ['addr', 'show'], LinkSchema)).toEqual([
        expect.objectContaining({ ifname: 'lo' }),
      ]);
    },
    'ip netns del broken': async (ran) => ok(ran),
    [`${ctl} release lease/ctr-cnitool-<hash>/eth0 --reason done`]: async (ran) => {
      ok(ran);
      expect(await untilPhase(cnitoolLease, 'Released')).toMatchObject({ closed: true });
    },
  });
  const { replayed, errors } = await replayTaskQueue(client, TASK_QUEUE);
  expect({ errors, atLeastTheTwoLeases: replayed >= 2 }).toEqual({ errors: [], atLeastTheTwoLeases: true });
  const pids = recordedPids();
  tracked.push(...pids);
  expect(pids.length).toBeGreaterThanOrEqual(5); // Temporal, etcd, kube-apiserver, two workers
  process.kill(launcher.pid, 'SIGINT');
  expect(await launcher.exited).toBe(0);
  expect(pids.filter(isAlive)).toEqual([]);
}, 120_000);
