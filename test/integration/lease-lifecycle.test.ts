// The lease lifecycle through the real shim executable against a real Temporal dev server.
import { randomUUID } from 'node:crypto';
import { leaseWorkflowId } from '../../domain/ids';
import { leaseStateQuery, podRunningSignal, releaseSignal } from '../../workflows/lease-messages';
import { netconf } from '../harness/netconf';
import { expectReplayed } from '../harness/replay';
import { runShim, type ShimCall } from '../harness/shim';
import { uniqueName, withControlWorker } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const node = uniqueName('node');
const ctx = withControlWorker('lifecycle', () => ({
  reuseCooldownSeconds: 3,
  activation: { stalledAfterSeconds: 3 },
}));

const pod = () => ({ uid: randomUUID(), name: uniqueName('pod') });
const call = (command: string, p: { uid: string; name: string }, containerId: string): ShimCall => ({
  command,
  containerId,
  netns: `/var/run/netns/${containerId}`,
  ifName: 'eth0',
  args: { IgnoreUnknown: '1', K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: p.name, K8S_POD_UID: p.uid },
  stdin: netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node }),
});

/** The failure types of the lease's local activities that failed, and the activities it scheduled. */
async function localFailuresAndActivities(uid: string) {
  const events =
    (await ctx.temporal.client.workflow.getHandle(leaseWorkflowId(uid, 'eth0')).fetchHistory()).events ?? [];
  return {
    failed: events.flatMap((e) => {
      const marker = e.markerRecordedEventAttributes;
      if (marker?.markerName !== 'core_local_activity' || !marker.failure) return [];
      return [
        marker.failure.applicationFailureInfo?.type ?? (marker.failure.timeoutFailureInfo ? 'timeout' : '?'),
      ];
    }),
    scheduled: events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []),
    tasks: events.filter((e) => e.workflowTaskCompletedEventAttributes).length,
  };
}

test("a new node's first ADD: the node asks for its produce again (its table rebuild queries the lease), which goes on at once as an ordinary activity", async () => {
  const fresh = uniqueName('fresh-node');
  const add = (p: { uid: string; name: string }) =>
    runShim({
      ...call('ADD', p, 'c' + p.uid),
      stdin: netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: fresh }),
    });
  const first = pod();
  expect((await add(first)).exitCode).toBe(0);
  // Not after the local activity's budget (a timeout): the rebuild's query waited for this lease's task.
  expect(await localFailuresAndActivities(first.uid)).toMatchObject({
    failed: ['TableRebuilding'],
    scheduled: ['produceAddresses'],
  });
  // The node's next lease is answered in its first workflow task.
  const next = pod();
  expect((await add(next)).exitCode).toBe(0);
  expect(await localFailuresAndActivities(next.uid)).toEqual({ failed: [], scheduled: [], tasks: 1 });
});

test('ADD returns both families; a retried ADD returns the same result', async () => {
  const p = pod();
  const first = await runShim(call('ADD', p, 'c1' + p.uid));
  expect(first.stderr).toBe('');
  expect(first.exitCode).toBe(0);
  const ips = (first.json?.ips ?? []) as Array<{ address: string; gateway?: string }>;
  expect(ips.map((ip) => ip.address)).toEqual([
    expect.stringMatching(/^198\.18\.\d+\.\d+\/26$/),
    expect.stringMatching(/^fd00:18::[0-9a-f:]+\/120$/),
  ]);
  expect(first.json?.routes).toEqual([
    { dst: '0.0.0.0/0', gw: ips[0]?.gateway },
    { dst: '::/0', gw: ips[1]?.gateway },
  ]);
  const again = await runShim(call('ADD', p, 'c1' + p.uid));
  expect(again.exitCode).toBe(0);
  expect(again.json).toEqual(first.json);
});

test('DEL twice succeeds; a recreated sandbox of the same pod gets the same address', async () => {
  const p = pod();
  const add = await runShim(call('ADD', p, 'old' + p.uid));
  expect(add.exitCode).toBe(0);
  for (let i = 0; i < 2; i++) {
    const del = await runShim(call('DEL', p, 'old' + p.uid));
    expect({ code: del.exitCode, out: del.stdout }).toEqual({ code: 0, out: '' });
  }
  const handle = ctx.temporal.client.workflow.getHandle(leaseWorkflowId(p.uid, 'eth0'));
  expect((await handle.query(leaseStateQuery)).phase).toBe('Produced');
  const recreated = await runShim(call('ADD', p, 'new' + p.uid));
  expect(recreated.exitCode).toBe(0);
  expect(recreated.json?.ips).toEqual(add.json?.ips);
  const state = await handle.query(leaseStateQuery);
  expect(state.attachments.map((a) => [a.containerId, a.status])).toEqual([['new' + p.uid, 'active']]);
});

test('DEL of an attachment nobody knows succeeds and creates nothing', async () => {
  const p = pod();
  const del = await runShim(call('DEL', p, 'ghost' + p.uid));
  expect(del.exitCode).toBe(0);
  await expect(
    ctx.temporal.client.workflow.getHandle(leaseWorkflowId(p.uid, 'eth0')).describe(),
  ).rejects.toThrow(/not found/i);
});

test('CHECK passes for the active attachment and fails for an unknown one', async () => {
  const p = pod();
  const add = await runShim(call('ADD', p, 'chk' + p.uid));
  const check = await runShim({
    ...call('CHECK', p, 'chk' + p.uid),
    stdin: { ...netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node }), prevResult: add.json },
  });
  expect({ code: check.exitCode, out: check.stdout }).toEqual({ code: 0, out: '' });
  const unknown = await runShim(call('CHECK', p, 'other' + p.uid));
  expect(unknown.exitCode).toBe(1);
  expect(unknown.json?.code).toBe(3);
  const wrong = await runShim({
    ...call('CHECK', p, 'chk' + p.uid),
    stdin: {
      ...netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node }),
      prevResult: { ips: [{ address: '198.19.255.1/26' }] },
    },
  });
  expect(wrong.json?.code).toBe(102);
});

test('podRunning moves the lease to Running with its search attributes', async () => {
  const p = pod();
  await runShim(call('ADD', p, 'run' + p.uid));
  const handle = ctx.temporal.client.workflow.getHandle(leaseWorkflowId(p.uid, 'eth0'));
  await handle.signal(podRunningSignal);
  const phase = await waitForValue(
    async () => (await handle.query(leaseStateQuery)).phase,
    (v) => v === 'Running',
    20000,
  );
  expect(phase).toBe('Running');
  const attributes = await waitForValue(
    async () => (await handle.describe()).searchAttributes,
    (sa) => sa.LeasePhase?.[0] === 'Running',
    20000,
  );
  expect(attributes.PodUID).toEqual([p.uid]);
  expect(attributes.NodeName).toEqual([node]);
  expect(attributes.IfName).toEqual(['eth0']);
  expect(attributes.PodRef).toEqual([`default/${p.name}`]);
  expect((attributes.IPAddresses ?? []).length).toBe(2);
});

test('an Active lease whose pod does not become Running is Stalled, not released', async () => {
  const p = pod();
  const add = await runShim(call('ADD', p, 'stall' + p.uid));
  expect(add.exitCode).toBe(0);
  const handle = ctx.temporal.client.workflow.getHandle(leaseWorkflowId(p.uid, 'eth0'));
  const stalled = await waitForValue(
    async () => (await handle.query(leaseStateQuery)).phase,
    (v) => v === 'Stalled',
    30000,
  );
  expect(stalled).toBe('Stalled');
  const state = await handle.query(leaseStateQuery);
  expect(state.addresses.map((a) => `${a.address}/${a.prefixLength}`)).toEqual(
    (add.json?.ips as Array<{ address: string }>).map((ip) => ip.address),
  );
  await handle.signal(podRunningSignal);
  expect(
    await waitForValue(
      async () => (await handle.query(leaseStateQuery)).phase,
      (v) => v === 'Running',
      20000,
    ),
  ).toBe('Running');
});

test('release returns the address, which is not handed out again before the cooldown ends', async () => {
  const cooldownMs = 3000;
  const p = pod();
  const add = await runShim(call('ADD', p, 'rel' + p.uid));
  const released = (add.json?.ips as Array<{ address: string }>).map((ip) => ip.address);
  const handle = ctx.temporal.client.workflow.getHandle(leaseWorkflowId(p.uid, 'eth0'));
  await handle.signal(releaseSignal, { reason: 'test release' });
  const final = await handle.result();
  expect(final.phase).toBe('Released');
  const releasedAt = Date.now();
  // Allocate until the released address shows up again; it must not before the cooldown is over.
  let reusedAt: number | undefined;
  for (let i = 0; i < 200 && reusedAt === undefined; i++) {
    const q = pod();
    const next = await runShim(call('ADD', q, 'cool' + q.uid));
    expect(next.exitCode).toBe(0);
    const got = (next.json?.ips as Array<{ address: string }>).map((ip) => ip.address);
    if (got.some((a) => released.includes(a))) reusedAt = Date.now();
    else if (Date.now() - releasedAt > cooldownMs * 3) break;
  }
  // The lowest free address is picked first, so once the cooldown ends it comes back.
  expect(reusedAt).toBeDefined();
  expect((reusedAt as number) - releasedAt).toBeGreaterThanOrEqual(cooldownMs - 50);
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(ctx.temporal, 6);
});
