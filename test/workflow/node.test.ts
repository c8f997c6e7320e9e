// The node workflow's edges with its activities replaced: a released address cools down before
// it is handed out again; a compensation that waits for a lease survives continue-as-new; the next
// block is acquired ahead of need; batches keep coming while the node continues-as-new; a released
// lease run's late allocation is refused.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { addressActivities } from '../../activities/addresses';
import type { AcquireBlockInput, MoveBlocksInput, ReturnBlocksInput } from '../../activities/blocks';
import type { PodsToJudge, PodVerdict } from '../../activities/table-evidence';
import { NetleaseConfigSchema, PoolSpecSchema } from '../../domain/config';
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import { FailureType, type LeaseStart } from '../../domain/lease';
import { LEASE_WORKFLOW_TYPE, leaseStateQuery } from '../../workflows/lease-messages';
import { nodeObservedSignal, nodeStateQuery } from '../../workflows/node-messages';
import { waitFor } from '../../tools/processes';
import { nodeOperations } from '../harness/node-operations';
import { expectReplayed } from '../harness/replay';
import { temporalAddress, uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { gate, workflowTestEnv, type WorkflowTestEnv } from '../harness/workflow-env';

const pool = PoolSpecSchema.parse({ name: 'p', cidrs: ['198.18.0.0/24'], blockSize: { ipv4: 29 } });
/** Blocks the stand-in pool handed out, in order: each node gets 198.18.0.0/29, 198.18.0.8/29, ... */
const acquired: AcquireBlockInput[] = [];
const handedTo = (node: string) => acquired.filter((a) => a.node === node).length;
const returnedBlocks: ReturnBlocksInput[] = [];
const movedBlocks: MoveBlocksInput[] = [];
/** The Node's uid a quorum read finds, per node name (none: no Node of that name). */
const liveNodeUid = new Map<string, string>();
/** Pod UIDs the stand-in cluster has (compensation asks which leases' pods are gone). */
const livePods = new Set<string>();

/** Opened by the test: the gone incarnation's return lands. */
const handBack = gate();

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('wf-node');
  await t.worker({
    acquireBlock: async (input: AcquireBlockInput) => {
      const handed = handedTo(input.node);
      if (input.pool.name === 'one-block' && handed > 0)
        throw ApplicationFailure.nonRetryable('no block left', FailureType.exhausted);
      acquired.push(input);
      // The stand-in pool of a handback node hands its one block to every incarnation.
      return input.node.startsWith('handback') ? '198.18.0.0/29' : `198.18.0.${8 * handed}/29`;
    },
    returnBlocks: async (input: ReturnBlocksInput) => {
      returnedBlocks.push(input);
      if (input.node.startsWith('handback')) await handBack.opened; // the return on its way
      return input.blocks ?? [];
    },
    moveBlocks: async (input: MoveBlocksInput) => {
      movedBlocks.push(input);
      return input.blocks;
    },
    readNodeIncarnation: async ({ nodeName }: { nodeName: string }) => ({
      cluster: true,
      uid: liveNodeUid.get(nodeName),
    }),
    judgePods: async ({ pods }: PodsToJudge): Promise<PodVerdict> => ({
      alive: pods.filter((p) => livePods.has(p.podUid)).map((p) => p.owner),
      gone: pods.filter((p) => !livePods.has(p.podUid)).map((p) => ({ owner: p.owner, reason: 'no pod' })),
    }),
    // A new node's rebuild finds nothing: no lease and no pool record of this node.
    nodeTableEvidence: async ({ forRun }: { forRun?: string }) => ({
      pools: [],
      blocks: [],
      leases: [],
      closed: [],
      cooldownMs: 0,
      forRun,
    }),
    // The stand-in lease below never gets its addresses and never lets go (until cancelled).
    produceAddresses: () => Context.current().cancelled as Promise<never>,
    returnAddresses: () => Context.current().cancelled as Promise<never>,
  });
});
afterAll(async () => t?.close());

const nodeHandle = (nodeName: string) => t.env.client.workflow.getHandle(nodeWorkflowId(nodeName));

/** What a control worker on this test's task queue runs with: a short node history, no cooldown. */
const controlConfig = () =>
  NetleaseConfigSchema.parse({
    temporal: { address: temporalAddress(), taskQueue: t.taskQueue },
    pools: [pool],
    nodeHistoryLimit: 100,
    reuseCooldownSeconds: 0,
  });

function nodeClient(nodeName: string, historyLimit = 5000) {
  const node = nodeOperations({ client: t.env.client, taskQueue: t.taskQueue, nodeName, historyLimit });
  return {
    handle: nodeHandle(nodeName),
    allocate: (owner: string, spec = pool, incarnation = '') =>
      node
        .allocate({ owner, podUid: owner, pool: spec, incarnation, run: 'r' })
        .then((grants) => grants.map((g) => g.address)),
    release: (owner: string, cooldownMs: number, spec = pool) =>
      node.release({ owner, pool: spec.name, cooldownMs, run: 'r' }),
  };
}

/** The type of the failure a refused operation was thrown as. */
const failureType = (err: unknown) => (err instanceof ApplicationFailure ? err.type : String(err));

test('a released address cools down: not handed out again until its cooldown ends', async () => {
  const spec = PoolSpecSchema.parse({ name: 'one-block', cidrs: ['198.18.0.0/24'], blockSize: { ipv4: 29 } });
  const node = nodeClient(uniqueName('cool'));
  const first = await node.allocate('o1', spec); // /29: gateway .1, addresses .2-.6
  expect(first).toEqual(['198.18.0.2']);
  await node.release('o1', 2000, spec);
  const releasedAt = Date.now();
  for (const [i, address] of ['198.18.0.3', '198.18.0.4', '198.18.0.5', '198.18.0.6'].entries())
    expect(await node.allocate(`o${i + 2}`, spec)).toEqual([address]);
  // Only the cooling address is left, and the pool has no other block: refused while it cools.
  const refused = await node.allocate('o6', spec).catch((err: unknown) => err);
  expect(Date.now()).toBeLessThan(releasedAt + 2000);
  expect(failureType(refused)).toBe(FailureType.exhausted);

  expect(await waitFor(() => Date.now() > releasedAt + 2000, 5000)).toBe(true);
  expect(await node.allocate('o7', spec)).toEqual(['198.18.0.2']);
});

test('compensation waiting for a lease continues across continue-as-new and then finishes', async () => {
  const nodeName = uniqueName('can');
  const node = nodeClient(nodeName, 100);
  const leaseStart: LeaseStart = {
    podUid: uniqueName('held'),
    podNamespace: 'ns',
    podName: 'held',
    ifName: 'eth0',
    nodeName,
    pool: pool.name,
    mode: 'ipam',
  };
  const owner = leaseWorkflowId(leaseStart.podUid, 'eth0');
  // A live lease that holds an address of incarnation A and will not give it back by itself.
  const lease = await t.env.client.workflow.start(LEASE_WORKFLOW_TYPE, {
    workflowId: owner,
    taskQueue: t.taskQueue,
    args: [leaseStart],
  });
  await node.allocate(owner, pool, 'uid-A');
  liveNodeUid.set(nodeName, 'uid-B'); // replaced under the same name; the pod is gone
  await node.handle.signal(nodeObservedSignal, { uid: 'uid-B' }); // A is retired: compensate
  await waitForValue(
    () => lease.query(leaseStateQuery),
    (s) => s.phase === 'Releasing',
    15_000,
  );

  const firstRun = (await node.handle.describe()).runId;
  for (let i = 0; (await node.handle.describe()).runId === firstRun && i < 60; i++)
    await node.allocate(`busy-${i}`, pool, 'uid-B');
  const next = await node.handle.query(nodeStateQuery);
  expect((await node.handle.describe()).runId).not.toBe(firstRun);
  expect(Object.keys(next.retired)).toEqual(['uid-A']);
  expect(Object.values(next.tables[pool.name]?.allocations ?? {}).map((a) => a.owner)).toContain(owner);

  await node.release(owner, 0); // the lease's address comes back: compensation can finish
  const done = await waitForValue(
    () => node.handle.query(nodeStateQuery),
    (s) => !s.retired['uid-A'],
    15_000,
  );
  expect(done.retired).toEqual({});
  expect(returnedBlocks.filter((r) => r.node === nodeName)).toEqual([
    expect.objectContaining({ incarnation: 'uid-A', blocks: [expect.stringMatching(/\/29$/)] }),
  ]);
  await lease.terminate('test done');
});

test('a block the pool hands back while the gone incarnation returns it waits for that return', async () => {
  // The soak (seed 1128290416): a replaced node's compensation returned its blocks in the task
  // that asked a block for the new incarnation; the pool handed one of them straight back, and the
  // node, still holding it for the old incarnation, refused it as "handed twice" (ADDs got 101).
  const nodeName = uniqueName('handback');
  const node = nodeClient(nodeName);
  expect(await node.allocate('o1', pool, 'uid-A')).toEqual(['198.18.0.2']);
  await node.release('o1', 0);
  liveNodeUid.set(nodeName, 'uid-B');
  await node.handle.signal(nodeObservedSignal, { uid: 'uid-B' }); // A is retired: its block goes back
  const returning = () => Promise.resolve(returnedBlocks.filter((r) => r.node === nodeName).length);
  await waitForValue(returning, (n) => n === 1, 15_000, 100, 'the return on its way');

  const granted = node.allocate('o2', pool, 'uid-B');
  await waitForValue(
    () => Promise.resolve(handedTo(nodeName)),
    (n) => n === 2,
    15_000,
    100,
    'the block handed back',
  );
  handBack.open();
  expect(await granted).toEqual(['198.18.0.2']);
  const table = (await node.handle.query(nodeStateQuery)).tables[pool.name];
  expect(table?.blocks).toEqual([{ cidr: '198.18.0.0/29', family: 4, incarnation: 'uid-B' }]);
});

test('the next block is acquired ahead of need: no allocation waits for it', async () => {
  const nodeName = uniqueName('ahead');
  const node = nodeClient(nodeName);
  // A /29 has five addresses (.1 is the gateway): handing out the last one asks for the next block.
  for (let i = 0; i < 4; i++) await node.allocate(`a${i}`);
  expect(handedTo(nodeName)).toBe(1);
  expect(await node.allocate('a4')).toEqual(['198.18.0.6']);
  const ahead = await waitForValue(
    () => node.handle.query(nodeStateQuery),
    (s) => s.tables[pool.name]?.blocks.length === 2,
    15_000,
  );
  expect(ahead.tables[pool.name]?.blocks.map((b) => b.cidr)).toEqual(['198.18.0.0/29', '198.18.0.8/29']);
  expect(await node.allocate('a5')).toEqual(['198.18.0.10']);
  expect(handedTo(nodeName)).toBe(2);
});

test('a lease run released before its allocation arrives is refused, sent alone or queued by the control worker', async () => {
  const nodeName = uniqueName('late');
  const node = nodeClient(nodeName);
  await node.allocate('other');
  await node.release('late', 0);
  const refused = await node.allocate('late').catch((err: unknown) => err);
  expect(failureType(refused)).toBe(FailureType.released);

  const activities = addressActivities({ client: t.env.client, config: controlConfig() });
  const lease = { leaseId: 'lease/late/eth0', run: 'r2', nodeName, pool: pool.name };
  await activities.returnAddresses(lease);
  const late = await activities.produceAddresses({ ...lease, podUid: 'late' }).catch((err: unknown) => err);
  expect((late as ApplicationFailure).type).toBe(FailureType.released);
  expect(
    Object.values((await node.handle.query(nodeStateQuery)).tables[pool.name]?.allocations ?? {}),
  ).toEqual([expect.objectContaining({ owner: 'other' })]);
});

test('batches from several workers keep coming while the node continues-as-new: each answered once', async () => {
  const nodeName = uniqueName('stream');
  // Three control workers, each with its own queue: up to three batches in flight at once.
  const workers = [0, 1, 2].map(() => addressActivities({ client: t.env.client, config: controlConfig() }));
  const leaseOf = (w: number, i: number) => ({
    leaseId: `lease/s${w}-${i}/eth0`,
    run: 'r',
    podUid: `s${w}-${i}`,
    nodeName,
    pool: pool.name,
  });
  const answers = new Map<string, string[]>();
  await Promise.all(
    workers.map(async (activities, w) => {
      for (let wave = 0; wave < 4; wave++) {
        const leases = Array.from({ length: 5 }, (_, i) => leaseOf(w, wave * 5 + i));
        const produced = await Promise.all(leases.map((l) => activities.produceAddresses(l)));
        produced.forEach((p, i) =>
          answers.set(
            leases[i]?.leaseId ?? '',
            p.addresses.map((a) => a.address),
          ),
        );
      }
    }),
  );

  const runs = [];
  for await (const run of t.env.client.workflow.list({ query: `WorkflowId = '${nodeWorkflowId(nodeName)}'` }))
    runs.push(run.runId);
  expect(runs.length).toBeGreaterThanOrEqual(2);
  const held = Object.values(
    (await nodeHandle(nodeName).query(nodeStateQuery)).tables[pool.name]?.allocations ?? {},
  );
  expect(held.map((a) => [a.owner, a.address]).sort()).toEqual(
    [...answers].map(([owner, addresses]) => [owner, addresses[0]]).sort(),
  );
  expect(new Set(held.map((a) => a.address)).size).toBe(60);
  // An operation sent again in a later run gets its first answer.
  expect((await workers[2]?.produceAddresses(leaseOf(0, 0)))?.addresses.map((a) => a.address)).toEqual(
    answers.get('lease/s0-0/eth0'),
  );
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed({ client: t.env.client, taskQueue: t.taskQueue }, 3);
});
