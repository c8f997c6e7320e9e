// Every button the Temporal UI (and CLI) offers an operator, pressed on the node and pool workflows
// (issue 25 items 2 and 3): Terminate, Reset, Request Cancellation, and signals and updates with
// empty or made-up input. None may hand a live pod's address to another pod or wedge a node.
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { nodeWorkflowId, poolWorkflowId } from '../../domain/ids';
import {
  batchUpdate,
  loadAllocationUpdate,
  nodeDeletedSignal,
  nodeObservedSignal,
  nodeStateQuery,
  rebuildUpdate,
} from '../../workflows/node-messages';
import {
  acquireBlocksUpdate,
  configureUpdate,
  endReservationsUpdate,
  moveBlocksUpdate,
  poolStateQuery,
  reservationsQuery,
  reserveAddressesUpdate,
  returnBlocksUpdate,
} from '../../workflows/pool-messages';
import { nodeReplacedSignal } from '../../workflows/lease-messages';
import { acceptedUpdates, currentDetails } from '../harness/history';
import {
  addFresh as addFreshTo,
  failedTasks,
  misowned,
  nodeWithPods as podsOn,
  resetToStart,
  signalFromForm,
  type HeldAddresses,
} from '../harness/operator-actions';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { waitForValue } from '../harness/wait';

let scenario: Scenario;
beforeAll(async () => (scenario = await Scenario.create('ops', { watch: false })));
afterAll(async () => scenario?.close());

const client = () => scenario.temporal.client;
const pool = () => scenario.temporal.taskQueue;
const nodeWithPods = (prefix: string, count: number) => podsOn(scenario, prefix, count);
const addFresh = (node: string, held: HeldAddresses) => addFreshTo(scenario, node, held);

/** No address of a live lease is allocated to another owner, and each is allocated to its own. */
const expectEveryLiveAddressOwned = async (node: string, held: HeldAddresses) =>
  expect(await misowned(scenario, node, held)).toEqual([]);

/** No workflow task of the workflow failed (a handler that threw would fail every one). */
const expectNoFailedTask = async (workflowId: string) =>
  expect(await failedTasks(client(), workflowId)).toEqual([]);

test('a terminated node workflow is started again with its table rebuilt: no live address is handed out', async () => {
  const { node, held } = await nodeWithPods('term', 3);
  await client().workflow.getHandle(nodeWorkflowId(node)).terminate('pressed Terminate');
  await addFresh(node, held);
  await expectEveryLiveAddressOwned(node, held);
  expect(await currentDetails(client(), nodeWorkflowId(node))).toContain('incarnation');
}, 120_000);

test('a node workflow reset to its first task (updates not reapplied) rebuilds its table before it is used', async () => {
  const { node, held } = await nodeWithPods('reset', 3);
  await resetToStart(client(), nodeWorkflowId(node));
  await addFresh(node, held);
  await addFresh(node, held);
  await expectEveryLiveAddressOwned(node, held);
}, 120_000);

test('a node workflow reset after its rebuild answers "unverified" until the control worker has it rebuild: no live address handed out', async () => {
  const { node, held } = await nodeWithPods('reset-late', 3);
  await resetToStart(client(), nodeWorkflowId(node), 'afterRebuild');
  await addFresh(node, held);
  await addFresh(node, held);
  await expectEveryLiveAddressOwned(node, held);
  // The path it took: the reset run was asked to rebuild (the update is in its own history).
  expect(await acceptedUpdates(client(), nodeWorkflowId(node))).toContain('rebuild');
}, 120_000);

test('a terminated pool workflow is started again with its blocks rebuilt: no block is handed out twice', async () => {
  const first = await nodeWithPods('pool-a', 1);
  await client().workflow.getHandle(poolWorkflowId(pool())).terminate('pressed Terminate');
  const second = await nodeWithPods('pool-b', 1);
  const blocksOf = async (node: string) => (await scenario.table(node))?.blocks.map((b) => b.cidr) ?? [];
  const [a, b] = [await blocksOf(first.node), await blocksOf(second.node)];
  expect(a.length).toBeGreaterThan(0);
  expect(b.filter((block) => a.includes(block))).toEqual([]);
  const blocks = (await client().workflow.getHandle(poolWorkflowId(pool())).query(poolStateQuery)).blocks;
  for (const block of a) expect(blocks[block]?.node).toBe(first.node);
}, 120_000);

test('a pool workflow reset after its rebuild answers "unverified" until it is rebuilt: no block handed out twice', async () => {
  const first = await nodeWithPods('pool-reset-a', 1);
  await resetToStart(client(), poolWorkflowId(pool()), 'afterRebuild');
  const second = await nodeWithPods('pool-reset-b', 1);
  const blocksOf = async (node: string) => (await scenario.table(node))?.blocks.map((b) => b.cidr) ?? [];
  const [a, b] = [await blocksOf(first.node), await blocksOf(second.node)];
  expect(a.length).toBeGreaterThan(0);
  expect(b.filter((block) => a.includes(block))).toEqual([]);
  expect(await acceptedUpdates(client(), poolWorkflowId(pool()))).toContain('rebuild');
}, 120_000);

test('a cancellation request on a node or pool workflow is ignored, with a note', async () => {
  const { node, held } = await nodeWithPods('cancel', 1);
  for (const id of [nodeWorkflowId(node), poolWorkflowId(pool())]) {
    await client().workflow.getHandle(id).cancel();
    await waitForValue(
      () => currentDetails(client(), id),
      (details) => details.includes('a cancellation request is ignored'),
      15_000,
    );
  }
  await addFresh(node, held);
  for (const id of [nodeWorkflowId(node), poolWorkflowId(pool())])
    expect((await client().workflow.getHandle(id).describe()).status.name).toBe('RUNNING');
}, 120_000);

test('node signals with no input or a made-up uid change nothing and fail no workflow task', async () => {
  const { node, held } = await nodeWithPods('signals', 1);
  const handle = client().workflow.getHandle(nodeWorkflowId(node));
  const before = await handle.query(nodeStateQuery);
  const send = (name: string, args: unknown[]) => signalFromForm(client(), nodeWorkflowId(node), name, args);
  await send(nodeObservedSignal.name, []);
  await send(nodeDeletedSignal.name, []);
  // Each is checked by a quorum read of its own, concurrently, and the note shows the latest:
  // send one, see its note, then the next.
  const noted = (text: string) =>
    waitForValue(
      () => currentDetails(client(), nodeWorkflowId(node)),
      (details) => details.includes(text),
      15_000,
    );
  await handle.signal(nodeObservedSignal, { uid: 'anything' });
  await noted('ignored a nodeObserved signal (uid anything');
  await handle.signal(nodeDeletedSignal, { uid: before.incarnation }); // the Node is still there
  await noted('ignored a nodeDeleted signal (uid');
  const after = await handle.query(nodeStateQuery);
  expect(after.incarnation).toBe(before.incarnation);
  expect(after.retired).toEqual({});
  await addFresh(node, held);
  await expectNoFailedTask(nodeWorkflowId(node));
}, 120_000);

test('node and pool updates with malformed input are refused before they are admitted', async () => {
  const { node } = await nodeWithPods('updates', 1);
  const nodeHandle = client().workflow.getHandle(nodeWorkflowId(node));
  const poolHandle = client().workflow.getHandle(poolWorkflowId(pool()));
  const before = JSON.stringify([
    await nodeHandle.query(nodeStateQuery),
    (await poolHandle.query(poolStateQuery)).blocks,
  ]);
  const refused = async (call: Promise<unknown>) => {
    const err = await call.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(String((err as WorkflowUpdateFailedError).cause?.message)).toMatch(/invalid \w+ request/);
  };
  const anything = (value: unknown) => value as never;
  await refused(nodeHandle.executeUpdate(batchUpdate, { args: [anything([{}])] }));
  await refused(nodeHandle.executeUpdate(batchUpdate, { args: [anything(undefined)] }));
  await refused(nodeHandle.executeUpdate(loadAllocationUpdate, { args: [anything({})] }));
  await refused(nodeHandle.executeUpdate(rebuildUpdate, { args: [anything({})] }));
  await refused(poolHandle.executeUpdate(acquireBlocksUpdate, { args: [anything([{ id: 'x' }])] }));
  await refused(poolHandle.executeUpdate(returnBlocksUpdate, { args: [anything({ blocks: 'all' })] }));
  await refused(poolHandle.executeUpdate(moveBlocksUpdate, { args: [anything({ node })] }));
  await refused(poolHandle.executeUpdate(configureUpdate, { args: [anything({ spec: { name: pool() } })] }));
  // The UI's empty form for the node agent's sticky reservation: refused, nothing reserved.
  await refused(poolHandle.executeUpdate(reserveAddressesUpdate, { args: [anything({})] }));
  await refused(poolHandle.executeUpdate(reserveAddressesUpdate, { args: [anything(undefined)] }));
  await refused(poolHandle.executeUpdate(endReservationsUpdate, { args: [anything({})] }));
  await refused(poolHandle.executeUpdate(endReservationsUpdate, { args: [anything(undefined)] }));
  expect(await poolHandle.query(reservationsQuery)).toEqual({});
  expect(
    JSON.stringify([await nodeHandle.query(nodeStateQuery), (await poolHandle.query(poolStateQuery)).blocks]),
  ).toBe(before);
  await expectNoFailedTask(nodeWorkflowId(node));
  await expectNoFailedTask(poolWorkflowId(pool()));
}, 120_000);

test('a lease ignores a nodeReplaced signal with no uid, with a note', async () => {
  const { held } = await nodeWithPods('lease-signal', 1);
  const [uid] = [...held.keys()];
  const lease = scenario.lease(uid as string);
  await lease.signal(nodeReplacedSignal, {} as { uid: string });
  await waitForValue(
    () => currentDetails(client(), lease.workflowId),
    (details) => details.includes('ignored a nodeReplaced signal'),
    15_000,
  );
  expect((await scenario.leaseState(uid as string)).phase).toBe('Active');
}, 60_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 10);
});
