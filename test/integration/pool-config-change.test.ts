// A pool cannot change under its handed-out blocks (issue 25 item 5): the control worker restarted
// on a changed config refuses to start when the change would move an address out from under a
// lease (naming the field and the way out), and applies one that only adds room.
import { join } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { consumeLease } from '../../cni/consume';
import { poolWorkflowId } from '../../domain/ids';
import { termsOf, type LeaseStart } from '../../domain/lease';
import { stopPid } from '../../tools/processes';
import { poolStateQuery } from '../../workflows/pool-messages';
import { startControlProcess, untilControlStarted, type ControlProcess } from '../harness/control-process';
import { expectReplayed } from '../harness/replay';
import { connectTest, temporalAddress, uniqueName, type TestTemporal } from '../harness/temporal';

let temporal: TestTemporal;
const dir = mkdtempSync(join(tmpdir(), 'netlease-pool-change-'));
beforeAll(async () => (temporal = await connectTest('pool-change')));
afterAll(async () => temporal?.close());

const configWith = (pool: Record<string, unknown>) => ({
  temporal: { address: temporalAddress(), taskQueue: temporal.taskQueue },
  pools: [{ name: temporal.taskQueue, cidrs: ['198.18.0.0/24', 'fd00:18::/64'], ...pool }],
  reuseCooldownSeconds: 0,
});

const started: ControlProcess[] = [];
const start = (pool: Record<string, unknown>) => {
  const control = startControlProcess(configWith(pool), join(dir, `${uniqueName('config')}.json`));
  started.push(control);
  return control;
};
afterEach(async () => {
  for (const control of started.splice(0)) await stopPid(control.pid);
});

/** The process refused to run: it exited non-zero, saying why. */
async function refusal(pool: Record<string, unknown>): Promise<string> {
  const control = start(pool);
  const code = await Promise.race([
    control.exited,
    new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 60_000).unref()),
  ]);
  expect(code).not.toBe(0);
  expect(code).not.toBe('still running');
  return control.output();
}

test('a change of blockSize, cidrs or exclude under a handed-out block is refused at start-up; an added CIDR is applied', async () => {
  const first = start({});
  await untilControlStarted(first);
  const start0: LeaseStart = {
    podUid: uniqueName('held'),
    podNamespace: 'ns',
    podName: 'held',
    ifName: 'eth0',
    nodeName: uniqueName('node'),
    pool: temporal.taskQueue,
    mode: 'ipam',
  };
  const grant = await consumeLease(temporal.client, temporal.taskQueue, start0, {
    containerId: 'ctr-1',
    netns: '/var/run/netns/x',
    ifName: 'eth0',
    terms: termsOf(start0),
  });
  expect(grant.addresses.map((a) => a.address)).toContain('198.18.0.2');
  await stopPid(first.pid);

  expect(await refusal({ blockSize: { ipv4: 25 } })).toMatch(
    /blockSize\.ipv4 changed from \/26 to \/25.*a new pool.*drain/,
  );
  expect(await refusal({ cidrs: ['fd00:18::/64'] })).toMatch(/cidrs no longer cover block 198\.18\.0\.0\/26/);
  expect(await refusal({ exclude: ['198.18.0.2'] })).toMatch(/exclude gained 198\.18\.0\.2/);
  expect(await refusal({ gateway: 'none' })).toMatch(/gateway changed/);
  // None of them changed the pool (read with the first config running again).
  const pool = temporal.client.workflow.getHandle(poolWorkflowId(temporal.taskQueue));
  const again = start({});
  await untilControlStarted(again);
  const unchanged = (await pool.query(poolStateQuery)).spec;
  expect([unchanged.cidrs, unchanged.blockSize.ipv4, unchanged.exclude, unchanged.gateway]).toEqual([
    ['198.18.0.0/24', 'fd00:18::/64'],
    26,
    [],
    'first',
  ]);
  await stopPid(again.pid);

  const grown = start({ cidrs: ['198.18.0.0/24', 'fd00:18::/64', '198.18.1.0/24'] });
  await untilControlStarted(grown);
  const spec = async () => (await pool.query(poolStateQuery)).spec.cidrs;
  const deadline = Date.now() + 30_000;
  while ((await spec()).length !== 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  expect(await spec()).toEqual(['198.18.0.0/24', 'fd00:18::/64', '198.18.1.0/24']);
}, 300_000);

test('a pool terminated (the UI) and started again by a worker with an unsafe change keeps the spec it served, and the change is refused (seen red: the worker ran on gateway none)', async () => {
  const pool = temporal.client.workflow.getHandle(poolWorkflowId(temporal.taskQueue));
  const running = start({ cidrs: ['198.18.0.0/24', 'fd00:18::/64', '198.18.1.0/24'] }); // the last applied
  await untilControlStarted(running);
  const { spec: served, blocks } = await pool.query(poolStateQuery);
  expect(Object.keys(blocks).length).toBeGreaterThan(0); // the first test's lease holds one
  await stopPid(running.pid);
  await pool.terminate('test: an operator terminates the pool workflow');
  expect(await refusal({ ...served, gateway: 'none' })).toMatch(
    /gateway changed from \W+first\W+ to \W+none/,
  );
  const again = start({ cidrs: served.cidrs });
  await untilControlStarted(again);
  expect((await pool.query(poolStateQuery)).spec).toEqual(served);
}, 300_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(temporal, 3);
});
