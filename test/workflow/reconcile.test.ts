// The reconcile workflow's outcomes: a summary when the cluster was read; a completed run marked
// skipped when the cluster could not be read through every attempt (the soak found a restart of
// the API failing the scheduled run); a failed run for a config that cannot work.
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowFailedError } from '@temporalio/client';
import type { ReconcileSummary } from '../../activities/reconcile';
import { reconcileWorkflow } from '../../workflows/reconcile';
import { expectReplayed } from '../harness/replay';
import { uniqueName } from '../harness/temporal';
import { workflowTestEnv, type WorkflowTestEnv } from '../harness/workflow-env';

type Cluster = 'readable' | 'unreachable' | 'misconfigured';
let cluster: Cluster = 'readable';
let attempts = 0;

const summary: ReconcileSummary = {
  leases: 3,
  pods: 2,
  nodes: 1,
  released: 1,
  confirmedRunning: 1,
  nodesDeleted: 0,
  nodesReplaced: 0,
};

async function reconcileCluster(): Promise<ReconcileSummary> {
  attempts++;
  if (cluster === 'unreachable') throw new Error('connect ECONNREFUSED 127.0.0.1:6443');
  if (cluster === 'misconfigured')
    throw ApplicationFailure.nonRetryable('no kubernetes section in the config', 'InvalidConfig');
  return summary;
}

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('reconcile');
  await t.worker({ reconcileCluster });
});
afterAll(async () => t?.close());

const run = (state: Cluster) => {
  cluster = state;
  attempts = 0;
  return t.env.client.workflow.execute(reconcileWorkflow, {
    taskQueue: t.taskQueue,
    workflowId: uniqueName('reconcile'),
  });
};

test('a readable cluster: the summary', async () => {
  expect(await run('readable')).toEqual(summary);
  expect(attempts).toBe(1);
});

test('an unreachable cluster through every attempt: the run completes as skipped, saying why', async () => {
  const result = await run('unreachable');
  expect(attempts).toBe(3);
  expect(result.skipped).toContain('ECONNREFUSED');
  expect(result).toMatchObject({ leases: 0, released: 0 });
});

test('a config that cannot work fails the run at once', async () => {
  await expect(run('misconfigured')).rejects.toBeInstanceOf(WorkflowFailedError);
  expect(attempts).toBe(1);
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed({ client: t.env.client, taskQueue: t.taskQueue }, 3);
});
