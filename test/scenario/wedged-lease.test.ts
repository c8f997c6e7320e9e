// A lease whose workflow task fails on every attempt does not move (docs/operating.md: "A lease
// that does not move"): the soak's one wedged lease (the SDK's update-order nondeterminism) held
// its pod's DEL and release until an operator terminated it. The reconciler's sweep ends such a
// run once its pending task reaches `kubernetes.wedgedLeases.failedTaskAttempts`, and the leak
// collection takes over in the same run: the lease is started again with its sandbox and its
// addresses (pod running), or the addresses are collected (pod gone). A task that failed once
// (a stalled or killed worker) is left alone. A node workflow wedged the same way is ended too, and
// the next ADD on its node starts it again with its table rebuilt from the leases.
//
// The failure is the workflow's own (workflows/failpoints: `brokenAt`): a run started with the
// failpoint memo throws a plain Error when the podRunning signal comes, on every attempt and every
// replay, as the SDK's nondeterminism does; so the closed run cannot answer a query either.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { reconcileActivities, type ReconcileSummary } from '../../activities/reconcile';
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import type { LeaseStart } from '../../domain/lease';
import { PAUSE_DIR_ENV, PAUSE_ENV } from '../../kernel/failpoint';
import { leaseStartOptions } from '../../temporal/leases';
import { ClusterReader } from '../../kubernetes/cluster-reader';
import { connectKube } from '../../kubernetes/kube';
import { failingWorkflowTask } from '../../temporal/workflow-task';
import { FAILPOINT_MEMO } from '../../workflows/failpoints';
import { LEASE_WORKFLOW_TYPE, leaseStateQuery, podRunningSignal } from '../../workflows/lease-messages';
import { NODE_WORKFLOW_TYPE, nodeObservedSignal } from '../../workflows/node-messages';
import { kubeconfigPath } from '../harness/kube';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const FAILED_TASK_ATTEMPTS = 4;

let scenario: Scenario;
beforeAll(
  async () =>
    (scenario = await Scenario.create('wedged', {
      watch: false,
      reuseCooldownSeconds: 1,
      wedgedLeases: { failedTaskAttempts: FAILED_TASK_ATTEMPTS },
    })),
);
afterAll(async () => scenario?.close());

/** A Running pod's lease with its sandbox; `broken`: started to fail at the podRunning signal. */
async function podWithLease(prefix: string, broken: boolean) {
  const { cluster, temporal } = scenario;
  const node = uniqueName(prefix);
  await cluster.createNode(node);
  const name = uniqueName(prefix);
  const uid = await cluster.createPod(name, node);
  const start: LeaseStart = {
    podUid: uid,
    podNamespace: cluster.namespace,
    podName: name,
    ifName: 'eth0',
    nodeName: node,
    pool: temporal.taskQueue,
    mode: 'ipam',
  };
  const memo = broken ? { memo: { [FAILPOINT_MEMO]: 'pod-running' } } : {};
  const started = await temporal.client.workflow.start(LEASE_WORKFLOW_TYPE, {
    ...leaseStartOptions(temporal.taskQueue, start),
    ...memo,
  });
  const addresses = (await scenario.add(name, uid, node)).map((g) => g.address); // joins the run
  await scenario.listed(uid);
  const before = await scenario.waitForPhase(uid, 'Active');
  await cluster.setPodPhase(name, 'Running');
  await scenario.lease(uid).signal(podRunningSignal); // what the watcher or the sweep sends
  return { node, name, uid, addresses, before, runId: started.firstExecutionRunId };
}

/** Until the lease's pending workflow task has been tried `attempt` times. */
const taskAttempt = (uid: string, attempt: number) =>
  waitForValue(
    () => failingWorkflowTask(scenario.temporal.client, leaseWorkflowId(uid, 'eth0')),
    (task) => (task?.attempt ?? 0) >= attempt,
    120_000,
    500,
    `the lease's workflow task at attempt ${attempt}`,
  );

/** The reason the run was terminated with (its last event). */
async function terminateReason(uid: string, runId: string): Promise<string> {
  const handle = scenario.temporal.client.workflow.getHandle(leaseWorkflowId(uid, 'eth0'), runId);
  const history = await handle.fetchHistory();
  return history.events?.at(-1)?.workflowExecutionTerminatedEventAttributes?.reason ?? '(not terminated)';
}

test('a wedged lease whose pod runs: ended, then started again with its addresses and sandbox (seen red: never moves)', async () => {
  const pod = await podWithLease('runs', true);
  await taskAttempt(pod.uid, FAILED_TASK_ATTEMPTS);
  const summary = await scenario.reconcile();
  expect(summary.leasesRecovered).toBe(1);
  expect(summary.leaksCollected ?? 0).toBe(0);
  expect(summary.wedgedLeasesEnded).toBe(1);
  const reason = await terminateReason(pod.uid, pod.runId);
  expect(reason).toContain('failpoint pod-running');
  expect(reason).toMatch(/pending attempt \d+/);
  // As with the SDK's nondeterminism, the ended run cannot answer: its sandbox came from its history.
  const ended = scenario.temporal.client.workflow.getHandle(leaseWorkflowId(pod.uid, 'eth0'), pod.runId);
  await expect(ended.query(leaseStateQuery)).rejects.toThrow('Failed to query Workflow');
  const again = await scenario.waitForPhase(pod.uid, 'Running');
  const run = await scenario.lease(pod.uid).describe();
  expect(run.runId).not.toBe(pod.runId);
  expect(again.addresses.map((a) => a.address)).toEqual(pod.addresses);
  expect(again.attachments.map((a) => a.containerId)).toEqual(
    pod.before.attachments.map((a) => a.containerId),
  );
  expect(await scenario.owners(pod.node, pod.addresses)).toEqual(
    pod.addresses.map(() => `lease/${pod.uid}/eth0`),
  );
  // The new run moves: the pod's deletion releases it as any lease.
  await scenario.deletedAndReleased(pod);
}, 240_000);

test('a wedged lease whose pod is gone: ended, and its addresses collected (seen red: held forever)', async () => {
  const pod = await podWithLease('gone', true);
  await taskAttempt(pod.uid, FAILED_TASK_ATTEMPTS);
  await scenario.cluster.deletePod(pod.name);
  const summary = await scenario.reconcile();
  expect(summary.leaksCollected).toBe(1);
  expect(summary.leasesRecovered ?? 0).toBe(0);
  expect(summary.wedgedLeasesEnded).toBe(1);
  expect(await terminateReason(pod.uid, pod.runId)).toContain('failpoint pod-running');
  const table = await scenario.table(pod.node);
  for (const address of pod.addresses) {
    expect(table?.allocations[address]).toBeUndefined();
    expect(table?.cooldowns[address]).toBeGreaterThan(0);
  }
}, 240_000);

test('a lease whose workflow task failed once (a stalled worker, attempt 2) is not ended, and moves on', async () => {
  // The control worker holds the completion of the task that takes podRunning: it times out.
  const gates = mkdtempSync(join(tmpdir(), 'wedged-'));
  process.env[PAUSE_ENV] = 'pod-running';
  process.env[PAUSE_DIR_ENV] = gates;
  try {
    const pod = await podWithLease('stalled', false);
    await taskAttempt(pod.uid, 2);
    const kube = await connectKube(kubeconfigPath());
    const { reconcileCluster } = reconcileActivities({
      client: scenario.temporal.client,
      config: scenario.config,
      reader: new ClusterReader(kube.core),
    });
    const summary = (await new MockActivityEnvironment().run(reconcileCluster)) as ReconcileSummary;
    expect(summary.leases).toBeGreaterThanOrEqual(1);
    expect(summary.wedgedLeasesEnded ?? 0).toBe(0);
    const run = await scenario.lease(pod.uid).describe();
    expect(run.status.name).toBe('RUNNING');
    expect(run.runId).toBe(pod.runId);
    delete process.env[PAUSE_ENV];
    for (const gate of readdirSync(gates)) rmSync(join(gates, gate));
    await scenario.waitForPhase(pod.uid, 'Running');
  } finally {
    delete process.env[PAUSE_ENV];
    delete process.env[PAUSE_DIR_ENV];
    rmSync(gates, { recursive: true, force: true });
  }
}, 240_000);

test('a wedged node workflow: ended, and the next ADD on its node starts it again with its table rebuilt (seen red without the sweep)', async () => {
  const { cluster, temporal } = scenario;
  const node = uniqueName('wedged-node');
  const nodeUid = await cluster.createNode(node);
  // Started as the first allocation would start it, with the failpoint memo.
  const wedged = await temporal.client.workflow.start(NODE_WORKFLOW_TYPE, {
    workflowId: nodeWorkflowId(node),
    taskQueue: temporal.taskQueue,
    args: [{ nodeName: node, historyLimit: 5000 }],
    memo: { [FAILPOINT_MEMO]: 'node-observed' },
  });
  const first = uniqueName('first');
  const firstUid = await cluster.createPod(first, node);
  const held = (await scenario.add(first, firstUid, node)).map((g) => g.address);
  await wedged.signal(nodeObservedSignal, { uid: nodeUid });
  await waitForValue(
    () => failingWorkflowTask(temporal.client, nodeWorkflowId(node)),
    (task) => (task?.attempt ?? 0) >= FAILED_TASK_ATTEMPTS,
    120_000,
    500,
    `the node's workflow task at attempt ${FAILED_TASK_ATTEMPTS}`,
  );
  const summary = await scenario.reconcile();
  expect(summary.wedgedNodesEnded).toBe(1);
  const last = (await wedged.fetchHistory()).events?.at(-1)?.workflowExecutionTerminatedEventAttributes;
  expect(last?.reason).toContain('failpoint node-observed');
  // The next ADD starts a new run, which rebuilt its table from the leases: the first pod keeps its addresses.
  const second = uniqueName('second');
  const secondUid = await cluster.createPod(second, node);
  const given = (await scenario.add(second, secondUid, node)).map((g) => g.address);
  expect(given.filter((a) => held.includes(a))).toEqual([]);
  expect((await temporal.client.workflow.getHandle(nodeWorkflowId(node)).describe()).runId).not.toBe(
    wedged.firstExecutionRunId,
  );
  expect(await scenario.owners(node, held)).toEqual(held.map(() => leaseWorkflowId(firstUid, 'eth0')));
}, 240_000);

// The runs made to fail replay too: a replay stops at their last completed task, before the
// podRunning signal that fails the next (a query runs that signal, and fails).
test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 8);
});
