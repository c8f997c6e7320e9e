// A pool's rebuild claims the block of an open lease's address that no node table covers (a node
// lost with it). The 10,000 soak (seed 3514050497): a sticky pod's lease had returned its address
// and stayed open, its deactivation waiting on a stopped agent; visibility still listed the
// address, the rebuild claimed its pinned block for the node, which no longer had it, and never
// gave it back: every later pod of that ordinal was fenced. The lease's own state decides.
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { Produced } from '../../activities/addresses';
import { tableEvidenceActivities } from '../../activities/table-evidence';
import { consumeLease } from '../../cni/consume';
import { ActivationPolicySchema, NetleaseConfigSchema, PoolSpecSchema } from '../../domain/config';
import { nodeTaskQueue } from '../../domain/dataplane';
import { termsOf } from '../../domain/lease';
import type { PoolEvidence } from '../../domain/table-rebuild';
import { leaseStartOptions } from '../../temporal/leases';
import { leaseExecutions } from '../../temporal/visibility';
import {
  confirmAnswerUpdate,
  deactivateUpdate,
  LEASE_WORKFLOW_TYPE,
  leaseStateQuery,
  releaseSignal,
} from '../../workflows/lease-messages';
import { expectReplayed } from '../harness/replay';
import { temporalAddress, uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import { gate, testLeaseStart, workflowTestEnv, type WorkflowTestEnv } from '../harness/workflow-env';

const node = uniqueName('wf-released-node');
const spec = PoolSpecSchema.parse({
  name: uniqueName('released'),
  cidrs: ['198.18.0.0/24'],
  blockSize: { ipv4: 26 },
});
const addresses = [{ family: 4 as const, address: '198.18.0.4', prefixLength: 26, gateway: '198.18.0.1' }];
const deactivationHeld = gate();
let deactivations = 0;
const delDeactivating = gate();

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('wf-released');
  await t.worker({
    produceAddresses: async (): Promise<Produced> => ({
      addresses,
      activation: ActivationPolicySchema.parse({}),
    }),
    returnAddresses: async () => [],
  });
  await t.worker(
    {
      activateAttachment: async () => ({
        host: { name: 'nl0', mac: '02:00:00:00:00:01' },
        container: { name: 'eth0', mac: '02:00:00:00:00:02' },
      }),
      // The agent is away: the DEL's deactivation waits, the release's gives up (it returns the
      // addresses anyway), and the lease stays open, released, until the DEL's ends.
      deactivateAttachment: async () => {
        deactivations += 1;
        if (deactivations > 1) throw ApplicationFailure.nonRetryable('the agent is away (test)');
        delDeactivating.open();
        return deactivationHeld.opened;
      },
    },
    nodeTaskQueue(node),
  );
});
afterAll(async () => {
  deactivationHeld.open();
  await t?.close();
});

test("a released lease still open is not evidence of its block: the pool's rebuild claims nothing for it", async () => {
  const start = testLeaseStart('released', node, 'ptp', { pool: spec.name });
  const sandbox = { containerId: 'ctr-1', netns: '/var/run/netns/x', ifName: 'eth0' };
  const handle = await t.env.client.workflow.start(
    LEASE_WORKFLOW_TYPE,
    leaseStartOptions(t.taskQueue, start),
  );
  await consumeLease(t.env.client, t.taskQueue, start, { ...sandbox, terms: termsOf(start) });
  // The agent made the interface and confirms its answer (the one ADD path); then the DEL comes.
  const links = {
    host: { name: 'nl0', mac: '02:00:00:00:00:01' },
    container: { name: 'eth0', mac: '02:00:00:00:00:02' },
  };
  await handle.executeUpdate(confirmAnswerUpdate, { args: [{ ...sandbox, links }] });
  const deactivated = handle.executeUpdate(deactivateUpdate, { args: [sandbox] });
  await delDeactivating.opened; // the DEL's deactivation is the one that waits
  await handle.signal(releaseSignal, { reason: 'pod gone' });
  await waitForValue(
    () => handle.query(leaseStateQuery),
    (s) => s.phase === 'Released',
    30_000,
  );
  // Visibility still lists the open lease with its address (what the rebuild read in the soak).
  const listed = await waitForValue(
    () => leaseExecutions(t.env.client, t.taskQueue, { open: true }),
    (rows) => rows.some((r) => r.workflowId === handle.workflowId && r.addresses.includes('198.18.0.4')),
    30_000,
  );
  expect(listed.length).toBe(1);

  const config = NetleaseConfigSchema.parse({
    temporal: { address: temporalAddress(), taskQueue: t.taskQueue },
    pools: [spec],
  });
  const { poolTableEvidence } = tableEvidenceActivities({ client: t.env.client, config });
  const evidence: PoolEvidence = await new MockActivityEnvironment().run(poolTableEvidence, {
    pool: spec.name,
  });
  expect(evidence.held).toEqual([]);

  deactivationHeld.open();
  expect(await deactivated).toBe(true);
  expect((await handle.result()).phase).toBe('Released');
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed({ client: t.env.client, taskQueue: t.taskQueue }, 1);
});
