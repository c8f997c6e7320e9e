// A pool the control plane serves but has not opened yet is "try again later", never "unknown pool"
// (issue 25 item 8): a pool that ran before and is being started again (terminated from the UI),
// or one an open pool of the control plane lists as configured. A pool nothing says is configured
// (no control plane on that task queue or namespace has opened one) is a mistake in the request (7).
import { poolWorkflowId } from '../../domain/ids';
import type { CniApi } from '../../worker/agent/cni-api';
import { expectNoLease } from '../harness/leftovers';
import { netconf } from '../harness/netconf';
import { expectReplayed } from '../harness/replay';
import { runShim } from '../harness/shim';
import {
  connectTest,
  runControlWorker,
  serveTestCniApi,
  testConfig,
  uniqueName,
  type RunningWorker,
  type TestTemporal,
} from '../harness/temporal';

let temporal: TestTemporal;
let cni: CniApi;
let worker: RunningWorker | undefined;
beforeAll(async () => {
  temporal = await connectTest('pool-open');
  cni = await serveTestCniApi(temporal.taskQueue);
});
afterAll(async () => {
  await cni?.close();
  await worker?.stop();
  await temporal?.close();
});

const node = uniqueName('node');
const second = () => `${temporal.taskQueue}-b`;
const add = (pool: string) => {
  const uid = uniqueName('uid');
  return runShim({
    command: 'ADD',
    containerId: `ctr-${uid}`,
    netns: `/var/run/netns/${uid}`,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: 'ns', K8S_POD_NAME: 'p', K8S_POD_UID: uid },
    stdin: netconf({ taskQueue: temporal.taskQueue, nodeName: node, pool }),
  }).then((outcome) => ({
    uid,
    code: outcome.json?.code,
    msg: String(outcome.json?.msg ?? ''),
    exitCode: outcome.exitCode,
  }));
};

test('before any control plane has opened a pool there: 7, naming the pool and the task queue, and no lease', async () => {
  const early = await add(temporal.taskQueue);
  expect(early).toMatchObject({ exitCode: 1, code: 7 });
  expect(early.msg).toBe(`unknown-pool: pool: unknown pool "${temporal.taskQueue}"`);
  await expectNoLease(temporal, node, early.uid);
}, 60_000);

test('once it runs: its pools are served, an unknown pool is 7, a terminated pool it serves is 11', async () => {
  worker = await runControlWorker(
    testConfig(temporal.taskQueue, {
      pools: [
        { name: temporal.taskQueue, cidrs: ['198.18.0.0/16'] },
        { name: second(), cidrs: ['198.19.0.0/16'] },
      ],
    }),
  );
  expect((await add(temporal.taskQueue)).exitCode).toBe(0);
  const typo = await add('nosuchpool');
  expect(typo).toMatchObject({ exitCode: 1, code: 7 });
  expect(typo.msg).toBe('unknown-pool: pool: unknown pool "nosuchpool"');

  // A pool that ran before, terminated: configured, being started again (seen red: 7 unknown pool).
  await temporal.client.workflow.getHandle(poolWorkflowId(second())).terminate('pressed Terminate');
  const refused = await add(second());
  expect(refused).toMatchObject({ exitCode: 1, code: 11 });
  expect(refused.msg).toBe(
    `control-plane-starting: the control plane is starting: pool "${second()}" is not open yet`,
  );
  await expectNoLease(temporal, node, refused.uid);
}, 120_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(temporal, 2);
});
