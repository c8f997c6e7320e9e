// A control worker starting while an operator terminates the pool workflow (found by the soak: a
// restart of the control worker overlapping `temporal workflow terminate --workflow-id pool/...`):
// its configure update, admitted and waiting for a worker, was aborted by the closing run, read as
// a refused config, and the control worker exited. A pool closed meanwhile is opened again (it
// rebuilds its blocks) and configured, as the reconciler does for one closed later.
import { NativeConnection, Worker } from '@temporalio/worker';
import { createControlActivities } from '../../activities/control';
import { poolWorkflowId } from '../../domain/ids';
import { configurePoolWorkflows, openPoolWorkflows } from '../../temporal/pools';
import { prebuiltBundle } from '../../worker/control/bundle';
import { poolStateQuery } from '../../workflows/pool-messages';
import { expectReplayed } from '../harness/replay';
import {
  connectTest,
  quietRuntime,
  temporalAddress,
  testConfig,
  type TestTemporal,
} from '../harness/temporal';
import { waitForValue } from '../harness/wait';

let temporal: TestTemporal;
beforeAll(async () => (temporal = await connectTest('pool-closed')));
afterAll(async () => temporal?.close());

test('configuring a pool whose workflow was terminated meanwhile opens it again and configures it', async () => {
  quietRuntime();
  const { client, taskQueue } = temporal;
  const config = testConfig(taskQueue);
  const pool = client.workflow.getHandle(poolWorkflowId(taskQueue));
  await openPoolWorkflows(client, config);
  const firstRun = (await pool.describe()).runId;
  // No worker yet (a control worker starting): the update waits, admitted, on the open run.
  const configuring = configurePoolWorkflows(client, config).then(
    () => 'configured',
    (err: unknown) => `failed: ${String(err)}`,
  );
  await waitForValue(
    () => pool.describe(),
    (d) => (d.raw.pendingWorkflowTask ?? null) !== null,
    15_000,
  );
  await pool.terminate('an operator, meanwhile');
  const connection = await NativeConnection.connect({ address: temporalAddress() });
  const worker = await Worker.create({
    connection,
    taskQueue,
    workflowBundle: prebuiltBundle(),
    activities: createControlActivities({ client, config }),
  });
  const running = worker.run();
  try {
    expect(await configuring).toBe('configured');
    const described = await pool.describe();
    expect(described.status.name).toBe('RUNNING');
    expect(described.runId).not.toBe(firstRun);
    expect((await pool.query(poolStateQuery)).spec).toEqual(config.pools[0]);
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
  }
  await expectReplayed(temporal, 2);
}, 60_000);
