// Pools as NetleasePool objects (issue 29 item 4) on the real kube-apiserver: the CRD of deploy/
// installs and its CEL rules refuse a bad CIDR, a block larger than its CIDR or a bad label
// selector, naming the field;
// a control worker reading its pools from the API opens the pool and an ADD gets an address of it;
// the status's counts are `netleasectl pools`' own; a change under handed-out blocks is refused in
// the Ready condition (the worker serves on), one that only adds room is applied; and the columns
// `kubectl get netleasepools` prints (the API's Table: there is no kubectl here). A pool's use
// crossing 80 % and 95 % raises one Warning Event on the object each (issue 29 item 5), and its
// counts are netlease_pool_addresses on the control worker's registry.
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { poolWorkflowId } from '../../domain/ids';
import type { Condition, PoolObject } from '../../domain/pool-object';
import { kubeApiError, KubeApiError } from '../../kubernetes/kube';
import { runToEnd } from '../../tools/processes';
import { poolStateQuery } from '../../workflows/pool-messages';
import { kubeconfigPath } from '../harness/kube';
import { installPoolCrd, poolObjects, type PoolObjectsApi } from '../harness/pool-objects';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { connectKube } from '../../kubernetes/kube';
import { controlRegistry } from '../../observability/control-metrics';
import { sampleValue } from '../harness/exposition';

const CLI = join(__dirname, '..', '..', 'cli', 'netleasectl.js');
let scenario: Scenario;
let pools: PoolObjectsApi;
const created: string[] = [];

beforeAll(async () => {
  await installPoolCrd(await connectKube(kubeconfigPath())); // before the worker's watch opens
  scenario = await Scenario.create('nlpool', { poolObjects: true, reuseCooldownSeconds: 1 });
  pools = poolObjects(scenario.cluster.clients);
});
afterAll(async () => {
  for (const name of created) await pools?.delete(name);
  await scenario?.close();
});

const create = async (name: string, spec: Record<string, unknown>) => {
  created.push(name);
  return pools.create(name, spec);
};

/** The API server's refusal of a create: its status code and message. */
async function refusal(spec: Record<string, unknown>, name = uniqueName('bad')): Promise<KubeApiError> {
  const err = kubeApiError(
    await create(name, spec).then(
      () => 'created',
      (e: unknown) => e,
    ),
  );
  if (!(err instanceof KubeApiError)) throw new Error(`not refused: ${JSON.stringify(spec)}: ${String(err)}`);
  return err;
}

test('the CRD of deploy/ refuses bad CIDRs and blocks larger than their CIDR, naming the field (422)', async () => {
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ cidrs: ['10.0.0.0/33'] }, /spec\.cidrs\[0\]: Invalid value: .*must be a CIDR/],
    [{ cidrs: ['10.0.0.1/24'] }, /spec\.cidrs\[0\]: .*host bits set/],
    [
      { cidrs: ['10.0.0.0/24'], blockSize: { ipv4: 20 } },
      /spec\.blockSize\.ipv4: Invalid value: .*block size is larger than an IPv4 CIDR of the pool/,
    ],
    [
      { cidrs: ['fd00::/112'], blockSize: { ipv6: 100 } },
      /spec\.blockSize\.ipv6: .*block size is larger than an IPv6 CIDR of the pool/,
    ],
    [{ cidrs: ['10.0.0.0/28'] }, /spec\.blockSize\.ipv4: .*block size is larger than an IPv4 CIDR/], // the default
    [{ cidrs: ['10.0.0.0/16', '10.0.1.0/24'] }, /spec\.cidrs: .*must not overlap/],
    [
      { cidrs: ['10.0.0.0/16'], exclude: ['10.0.0.300'] },
      /spec\.exclude\[0\]: .*must be a CIDR or an address/,
    ],
    [{ cidrs: ['10.0.0.0/16'], gateway: 'last' }, /spec\.gateway: Unsupported value: "last"/],
    [{ cidrs: [] }, /spec\.cidrs: Invalid value: 0: .*should have at least 1 items/],
    [
      { cidrs: ['10.0.0.0/16'], nodeSelector: { matchExpressions: [{ key: 'zone', operator: 'In' }] } },
      /spec\.nodeSelector\.matchExpressions\[0\]: .*In and NotIn need at least one value/,
    ],
    [
      {
        cidrs: ['10.0.0.0/16'],
        namespaceSelector: { matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] },
      },
      /spec\.namespaceSelector\.matchExpressions\[0\]: .*Exists and DoesNotExist take no values/,
    ],
    [
      {
        cidrs: ['10.0.0.0/16'],
        nodeSelector: { matchExpressions: [{ key: 'a', operator: 'Near', values: ['x'] }] },
      },
      /spec\.nodeSelector\.matchExpressions\[0\]\.operator: Unsupported value: "Near"/,
    ],
  ];
  for (const [spec, message] of cases) {
    const err = await refusal(spec);
    expect({ spec, code: err.code, message: err.message }).toEqual({
      spec,
      code: 422,
      message: expect.stringMatching(message),
    });
  }
  expect((await refusal({ cidrs: ['10.0.0.0/16'] }, 'a.b')).message).toMatch(/names the pool: a DNS label/);
  // A good one is stored with the schema's defaults, and its selectors as given.
  const nodeSelector = {
    matchExpressions: [{ key: 'topology.kubernetes.io/region', operator: 'In', values: ['eu'] }],
  };
  const good = await create(uniqueName('good'), {
    cidrs: ['10.0.0.0/16', 'fd00::/64'],
    exclude: ['10.0.0.1'],
    namespaceSelector: { matchLabels: { env: 'prod' } },
    nodeSelector,
  });
  expect(good.spec).toEqual({
    cidrs: ['10.0.0.0/16', 'fd00::/64'],
    exclude: ['10.0.0.1'],
    blockSize: { ipv4: 26, ipv6: 120 },
    gateway: 'first',
    namespaceSelector: { matchLabels: { env: 'prod' } },
    nodeSelector,
  });
});

const conditionOf = (object: PoolObject, type: string): Condition | undefined =>
  object.status?.conditions.find((c) => c.type === type);

/** The object once `done` holds for it (the control worker writes its status). */
const untilPool = (name: string, done: (o: PoolObject) => boolean, what: string) =>
  waitForValue(() => pools.read(name), done, 60_000, 200, what);

interface Family {
  capacity: number;
  allocated: number;
  reserved: number;
  cooldown: number;
  leaked: number;
}
const familyStatus = (object: PoolObject, family: 'ipv4' | 'ipv6') =>
  (object.status as Record<string, unknown> | undefined)?.[family] as
    (Family & { usage: string }) | undefined;

/** The five counts, whatever else the object has (netleasectl's `family`, the status's `usage`). */
const figuresOf = (counts: Family | undefined): Family | undefined =>
  counts && {
    capacity: counts.capacity,
    allocated: counts.allocated,
    reserved: counts.reserved,
    cooldown: counts.cooldown,
    leaked: counts.leaked,
  };

const node = uniqueName('nlpool-node');
const poolName = () => scenario.temporal.taskQueue;

async function addPod(): Promise<string> {
  const name = uniqueName('pod');
  const uid = await scenario.cluster.createPod(name, node);
  const grants = await scenario.add(name, uid, node);
  return grants.find((g) => g.family === 4)?.address ?? '';
}

test('a control worker reading pools from the API opens the pool; an ADD gets an address of it', async () => {
  await scenario.cluster.createNode(node);
  await create(poolName(), { cidrs: ['198.18.0.0/24', 'fd00:18::/64'] });
  const ready = await untilPool(poolName(), (o) => conditionOf(o, 'Ready')?.status === 'True', 'Ready');
  expect(conditionOf(ready, 'Ready')).toMatchObject({ reason: 'Applied', observedGeneration: 1 });
  expect(await addPod()).toBe('198.18.0.2'); // .1 is the block's gateway
});

test('status: capacity, allocated, reserved, cooldown and leaked per family are netleasectl’s figures', async () => {
  const leaking = uniqueName('leaking');
  const uid = await scenario.cluster.createPod(leaking, node);
  await scenario.add(leaking, uid, node);
  await addPod();
  await scenario.lease(uid).terminate('a leak: closed without returning its addresses');
  const expected = { capacity: 4 * (62 - 1), allocated: 3, reserved: 61 - 3, cooldown: 0, leaked: 1 };
  const v4 = await waitForValue(
    async () => familyStatus(await pools.read(poolName()), 'ipv4'),
    (status) => isDeepStrictEqual(status, { ...expected, usage: '3/244' }),
    60_000,
    200,
    `ipv4 status ${JSON.stringify(expected)}`,
  );
  const object = await pools.read(poolName());
  const run = await runToEnd('node', [CLI, 'pools', '-o', 'json', ...scenario.ctlFlags()]);
  expect({ exitCode: run.exitCode, stderr: run.stderr }).toEqual({ exitCode: 0, stderr: '' });
  const listed = (
    JSON.parse(run.stdout) as Array<{ name: string; families: Array<Family & { family: number }> }>
  ).find((p) => p.name === poolName());
  const ctl = (family: number) => figuresOf(listed?.families.find((f) => f.family === family));
  expect(figuresOf(v4)).toEqual(ctl(4));
  expect(ctl(4)).toEqual(expected);
  // IPv6: a /64 of /120 blocks holds more than 2^53 addresses; the count says so.
  const v6 = familyStatus(
    await untilPool(poolName(), (o) => familyStatus(o, 'ipv6')?.allocated === 3, 'ipv6 3'),
    'ipv6',
  );
  expect(v6).toMatchObject({ ...ctl(6), capacity: Number.MAX_SAFE_INTEGER, allocated: 3, leaked: 1 });
  expect(conditionOf(object, 'NearlyExhausted')).toMatchObject({ status: 'False', reason: 'BelowThreshold' });
});

test('a change under handed-out blocks is refused in Ready (the pool keeps its spec, ADDs go on); added room is applied', async () => {
  const pool = scenario.temporal.client.workflow.getHandle(poolWorkflowId(poolName()));
  await pools.patchSpec(poolName(), { blockSize: { ipv4: 25 } });
  const refused = await untilPool(
    poolName(),
    (o) => conditionOf(o, 'Ready')?.reason === 'ChangeRefused',
    'Ready False ChangeRefused',
  );
  expect(conditionOf(refused, 'Ready')).toMatchObject({
    status: 'False',
    observedGeneration: 2,
    message: expect.stringMatching(
      /blockSize\.ipv4 changed from \/26 to \/25 while 2 block\(s\) are handed out.*drain/,
    ),
  });
  expect((await pool.query(poolStateQuery)).spec.blockSize.ipv4).toBe(26);
  expect(await addPod()).toMatch(/^198\.18\.0\./); // the worker serves on

  await pools.patchSpec(poolName(), {
    blockSize: { ipv4: 26 },
    cidrs: ['198.18.0.0/24', 'fd00:18::/64', '198.18.1.0/24'],
  });
  const applied = await untilPool(
    poolName(),
    (o) => conditionOf(o, 'Ready')?.status === 'True' && conditionOf(o, 'Ready')?.observedGeneration === 3,
    'Ready True for generation 3',
  );
  expect(conditionOf(applied, 'Ready')?.reason).toBe('Applied');
  expect((await pool.query(poolStateQuery)).spec.cidrs).toEqual([
    '198.18.0.0/24',
    'fd00:18::/64',
    '198.18.1.0/24',
  ]);
  await untilPool(poolName(), (o) => familyStatus(o, 'ipv4')?.capacity === 8 * 61, 'capacity of 8 blocks');
});

test('kubectl get netleasepools: CIDRs, allocated/capacity per family, Ready and age in columns', async () => {
  const object = await pools.read(poolName());
  const { columns, cells } = await pools.table(poolName());
  expect(columns).toEqual(['Name', 'CIDRs', 'IPv4', 'IPv6', 'Ready', 'Exhausted', 'Age']);
  const row = Object.fromEntries(columns.map((c, i) => [c, cells[i]]));
  expect(row).toMatchObject({
    Name: poolName(),
    IPv4: familyStatus(object, 'ipv4')?.usage,
    IPv6: familyStatus(object, 'ipv6')?.usage,
    Ready: 'True',
    Exhausted: 'False',
  });
  expect(row.IPv4).toMatch(/^\d+\/488$/);
  expect(row.CIDRs).toBe('["198.18.0.0/24","fd00:18::/64","198.18.1.0/24"]');
  expect(row.Age).toEqual(expect.any(String));
});

test('use crossing 80 % and 95 %: one Warning Event on the NetleasePool each, not one per status write; netlease_pool_addresses', async () => {
  const tiny = uniqueName('tiny');
  await create(tiny, { cidrs: ['198.51.100.0/29'], blockSize: { ipv4: 29 } }); // 8 - network, broadcast, gateway: 5
  await untilPool(tiny, (o) => conditionOf(o, 'Ready')?.status === 'True', 'tiny Ready');
  const addTo = async (count: number) => {
    for (let i = 0; i < count; i++) {
      const name = uniqueName('tiny-pod');
      await scenario.add(
        name,
        await scenario.cluster.createPod(name, node),
        node,
        undefined,
        undefined,
        tiny,
      );
    }
  };
  const poolEvents = async () =>
    (
      await scenario.cluster.clients.core.listNamespacedEvent({
        namespace: 'default',
        fieldSelector: `involvedObject.kind=NetleasePool,involvedObject.name=${tiny}`,
      })
    ).items.map((e) => ({ type: e.type, reason: e.reason, count: e.count, message: e.message }));
  const sampledAt = async () => String((await pools.read(tiny)).status?.sampledAt ?? '');
  /** Two more status writes after now: what a write would raise has been raised. */
  const twoWrites = async () => {
    const first = await sampledAt();
    const second = await waitForValue(sampledAt, (at) => at > first, 10_000);
    await waitForValue(sampledAt, (at) => at > second, 10_000);
  };

  await addTo(3); // 3 of 5: 60 %
  await untilPool(tiny, (o) => familyStatus(o, 'ipv4')?.allocated === 3, 'tiny 3 allocated');
  await twoWrites();
  expect(await poolEvents()).toEqual([]);

  await addTo(1); // 4 of 5: 80 %
  const nearly = await untilPool(
    tiny,
    (o) => conditionOf(o, 'NearlyExhausted')?.status === 'True',
    'NearlyExhausted',
  );
  const raised = await waitForValue(poolEvents, (events) => events.length > 0, 10_000);
  expect(raised).toEqual([
    {
      type: 'Warning',
      reason: 'PoolNearlyExhausted',
      count: 1,
      message: `NearlyExhausted: ${conditionOf(nearly, 'NearlyExhausted')?.message}`,
    },
  ]);
  await twoWrites();
  expect(await poolEvents()).toEqual(raised); // once per crossing, not on every status write
  const metric = async (state: string) =>
    sampleValue(await controlRegistry.metrics(), 'netlease_pool_addresses', {
      pool: tiny,
      family: 'ipv4',
      state,
    });
  expect([await metric('capacity'), await metric('allocated'), await metric('leaked')]).toEqual([5, 4, 0]);

  await addTo(1); // 5 of 5
  await untilPool(tiny, (o) => conditionOf(o, 'Exhausted')?.status === 'True', 'Exhausted');
  const both = await waitForValue(poolEvents, (events) => events.length === 2, 10_000);
  expect(both.map((e) => [e.reason, e.count])).toEqual(
    expect.arrayContaining([
      ['PoolNearlyExhausted', 1],
      ['PoolExhausted', 1],
    ]),
  );
  expect(await metric('allocated')).toBe(5);
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 3);
});
