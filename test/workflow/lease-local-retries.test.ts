// A produce whose local call fails at once, again and again (the cluster unreachable): it goes on
// as an ordinary activity after a few local attempts. sdk-core drops a local activity's
// schedule-to-close timeout that fires while the activity backs off between attempts (the timer
// finds no running attempt to complete), so a call that fails fast never timed out: it retried in
// the workflow task for as long as the cluster was away, the task heartbeating every 8 s and adding
// three events each time (the history recorder's release-producing scenario: 48 attempts in 8 min).
import { Context } from '@temporalio/activity';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Produced } from '../../activities/addresses';
import { ActivationPolicySchema } from '../../domain/config';
import { leaseStartOptions } from '../../temporal/leases';
import { LEASE_WORKFLOW_TYPE, leaseStateQuery } from '../../workflows/lease-messages';
import { expectReplayed } from '../harness/replay';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { workflowTestEnv, type WorkflowTestEnv, testLeaseStart } from '../harness/workflow-env';

const { EventType } = temporal.api.enums.v1;
const addresses = [{ family: 4 as const, address: '198.18.0.9', prefixLength: 26, gateway: '198.18.0.1' }];
const calls: Array<'local' | 'ordinary'> = [];
let lease: WorkflowHandle | undefined;

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('wf-local-retries');
  await t.worker({
    produceAddresses: async (): Promise<Produced> => {
      const local = Context.current().info.isLocal;
      calls.push(local ? 'local' : 'ordinary');
      if (local) throw new Error('connect ECONNREFUSED (the cluster is away)');
      return { addresses, activation: ActivationPolicySchema.parse({}) };
    },
  });
});
afterAll(async () => {
  // Red, the local call retries in the task for ever: the worker would wait on it to shut down.
  await lease?.terminate('test over').catch(() => undefined);
  await t?.close();
});

test('a produce whose local call keeps failing fast goes on as an ordinary activity', async () => {
  const start = testLeaseStart('retries', uniqueName('wf-retries-node'), 'ipam');
  const handle = await t.env.client.workflow.start(
    LEASE_WORKFLOW_TYPE,
    leaseStartOptions(t.taskQueue, start),
  );
  lease = handle;
  const state = await waitForValue(
    () => handle.query(leaseStateQuery),
    (s) => s.phase === 'Produced',
    20_000,
    250,
    'the lease produced by the ordinary activity',
  );
  expect(state.addresses.map((a) => a.address)).toEqual(['198.18.0.9']);
  const local = calls.filter((c) => c === 'local').length;
  expect(local).toBeGreaterThanOrEqual(1);
  expect(local).toBeLessThanOrEqual(3);
  expect(calls.at(-1)).toBe('ordinary');
  const events = (await handle.fetchHistory()).events ?? [];
  const scheduled = events.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED).length;
  expect(scheduled).toBe(1);
  await expectReplayed({ client: t.env.client, taskQueue: t.taskQueue }, 1);
}, 60_000);
