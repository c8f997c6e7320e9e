// A local activity whose workflow task ended before it did (the task carried a query, or it waited
// past the task's heartbeat): its result comes in a later task, and the SDK delivers it differently
// live and on replay. Live, it comes in an activation of its own once the task's other jobs have
// run; on replay, with them, in the task's first activation (sdk-core sorts local activity
// results last in an activation, and resolves a marker it finds among the task's commands at the
// task's start). The soak's history: the return's local activity, started by a release while a
// deactivate update waited on its activity, failed in the task that completed that activity; the
// live worker completed the update first, a replay scheduled the fallback activity first.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Context } from '@temporalio/activity';
import { temporal } from '@temporalio/proto';
import { consumeLease } from '../../cni/consume';
import type { Produced } from '../../activities/addresses';
import { ActivationPolicySchema } from '../../domain/config';
import { nodeTaskQueue } from '../../domain/dataplane';
import { termsOf } from '../../domain/lease';
import { leaseStartOptions } from '../../temporal/leases';
import { deactivateUpdate, LEASE_WORKFLOW_TYPE, releaseSignal } from '../../workflows/lease-messages';
import { COMMAND_EVENTS, eventName } from '../harness/history';
import { expectReplayed, historyFromShowJson, replayErrorOf } from '../harness/replay';
import { uniqueName } from '../harness/temporal';
import { gate, workflowTestEnv, type WorkflowTestEnv, testLeaseStart } from '../harness/workflow-env';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const fixture = (name: string) => join(__dirname, '..', '..', '..', 'test', 'fixtures', name);

const node = uniqueName('wf-local-node');
const addresses = [{ family: 4 as const, address: '198.18.0.3', prefixLength: 26, gateway: '198.18.0.1' }];
/** One try's gates: the deactivate update's activity runs until the return's local activity has begun. */
const gates = () => ({
  deactivating: gate(),
  returning: gate(),
  returnCalls: [] as Array<'local' | 'ordinary'>,
});
let current = gates();
const done = gate();

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('wf-local');
  await t.worker({
    produceAddresses: async (): Promise<Produced> => ({
      addresses,
      activation: ActivationPolicySchema.parse({}),
    }),
    // The local call outlasts its 3 s (the node workflow away); the ordinary one that follows returns.
    returnAddresses: async () => {
      const context = Context.current();
      const { returnCalls, returning } = current;
      returnCalls.push(context.info.isLocal ? 'local' : 'ordinary');
      if (!context.info.isLocal) return [];
      returning.open();
      await Promise.race([context.cancelled, done.opened]).catch(() => undefined);
      return [];
    },
  });
  await t.worker(
    {
      activateAttachment: async () => ({
        host: { name: 'nl0', mac: '02:00:00:00:00:01' },
        container: { name: 'eth0', mac: '02:00:00:00:00:02' },
      }),
      deactivateAttachment: async () => {
        const { deactivating, returning } = current;
        deactivating.open();
        await returning.opened;
      },
    },
    nodeTaskQueue(node),
  );
});
afterAll(async () => {
  done.open();
  await t?.close();
});

/** Each completed workflow task's commands (the events that follow its completion), in order. */
function commandsByTask(events: HistoryEvent[]): string[][] {
  const tasks: string[][] = [];
  let current: string[] | undefined;
  for (const name of events.map(eventName)) {
    if (name === 'WORKFLOW_TASK_COMPLETED') tasks.push((current = []));
    else if (current && COMMAND_EVENTS.has(name)) current.push(name);
    else current = undefined;
  }
  return tasks;
}

/** The soak's shape: the update's completion, the local activity's marker, its fallback, in one task. */
const SPLIT_TASK = ['WORKFLOW_EXECUTION_UPDATE_COMPLETED', 'MARKER_RECORDED', 'ACTIVITY_TASK_SCHEDULED'];

test('the soak history replays: the fallback of a return whose local activity outlived its task follows the update', async () => {
  const history = historyFromShowJson(
    readFileSync(fixture('return-local-activity-after-split-task.history.json'), 'utf8'),
  );
  expect(commandsByTask(history.events)).toContainEqual(SPLIT_TASK);
  expect(await replayErrorOf('fixture', history)).toBeUndefined();
});

/** One release while a deactivate update waits; the commands of each task of its history. */
async function releaseWhileDeactivating(): Promise<string[][]> {
  current = gates();
  const { deactivating, returnCalls } = current;
  const start = testLeaseStart('local', node, 'ptp');
  const sandbox = { containerId: 'ctr-1', netns: '/var/run/netns/x', ifName: 'eth0' };
  // A short task timeout: the SDK ends a task that waits on a local activity at 80 % of it (2.4 s),
  // before the local activity's 3 s are up, as a query in the task ends it at once.
  const handle = await t.env.client.workflow.start(LEASE_WORKFLOW_TYPE, {
    ...leaseStartOptions(t.taskQueue, start),
    workflowTaskTimeout: '3 seconds',
  });
  await consumeLease(t.env.client, t.taskQueue, start, { ...sandbox, terms: termsOf(start) });

  const deactivated = handle.executeUpdate(deactivateUpdate, { args: [sandbox] });
  await deactivating.opened;
  // The release comes while the update waits on its activity; the activity completes once the
  // return's local activity has begun, so the next task carries its result.
  await handle.signal(releaseSignal, { reason: 'pod gone' });
  expect(await deactivated).toBe(true);
  expect((await handle.result()).phase).toBe('Released');
  // Local first, then the ordinary call once. (Under load a 3 s task can time out while the local
  // call runs: the run is replayed and asks for it again, so there may be more local calls.)
  expect(returnCalls[0]).toBe('local');
  expect(returnCalls.filter((c) => c === 'ordinary')).toEqual(['ordinary']);
  expect(returnCalls.at(-1)).toBe('ordinary');
  return commandsByTask((await handle.fetchHistory()).events ?? []);
}

/** Tries until one history has the soak's shape (the update's completion can come a task earlier when the worker is slow). */
const TRIES = 4;

test('the scale run history replays: a return cancelled by sdk-core before it ran failed its lease then', async () => {
  // Runs from before the `cancelled-local-call-goes-on` patch failed here; new runs go on as an
  // ordinary activity (workflows/lease/addresses isFinal). The recorded failure stays as it was.
  const history = historyFromShowJson(
    readFileSync(fixture('return-local-activity-cancelled.history.json'), 'utf8'),
  );
  const last = history.events.at(-1);
  expect(last?.workflowExecutionFailedEventAttributes?.failure?.message).toBe('Local Activity cancelled');
  expect(await replayErrorOf('cancelled', history)).toBeUndefined();
});

test('a release whose local return outlasts its task while a deactivate update completes: the history replays', async () => {
  const shapes: string[][][] = [];
  while (shapes.length < TRIES && !shapes.at(-1)?.some((task) => task.join() === SPLIT_TASK.join()))
    shapes.push(await releaseWhileDeactivating());
  expect(shapes.at(-1)).toContainEqual(SPLIT_TASK);
  await expectReplayed({ client: t.env.client, taskQueue: t.taskQueue }, shapes.length);
}, 150_000);
