// Release signals and a deactivate update carried by one workflow task (the control worker was gone
// while they arrived: its sticky task timed out, a new worker took the task). The SDK may run the
// workflow's continuations between the jobs of such a task or only after all of them, and the first
// run and a replay can differ; the soak's history (fixture) is one where they did.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { consumeLease } from '../../cni/consume';
import type { Produced } from '../../activities/addresses';
import { ActivationPolicySchema } from '../../domain/config';
import { nodeTaskQueue } from '../../domain/dataplane';
import { leaseWorkflowId } from '../../domain/ids';
import { termsOf } from '../../domain/lease';
import {
  deactivateUpdate,
  leaseStateQuery,
  podRunningSignal,
  releaseSignal,
} from '../../workflows/lease-messages';
import { COMMAND_EVENTS, eventName } from '../harness/history';
import { expectReplayed, historyFromShowJson, replayErrorOf } from '../harness/replay';
import { uniqueName } from '../harness/temporal';
import { heldTask } from '../harness/one-task';
import { waitForValue } from '../harness/wait';
import { workflowTestEnv, type WorkflowTestEnv, testLeaseStart } from '../harness/workflow-env';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const node = uniqueName('wf-order-node');
const addresses = [{ family: 4 as const, address: '198.18.0.2', prefixLength: 26, gateway: '198.18.0.1' }];
const returned: string[] = [];
const control = {
  produceAddresses: async (): Promise<Produced> => ({
    addresses,
    activation: ActivationPolicySchema.parse({}),
  }),
  returnAddresses: async ({ leaseId }: { leaseId: string }) => {
    returned.push(leaseId);
    return [];
  },
};

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('wf-order');
  await t.worker(
    {
      activateAttachment: async () => ({
        host: { name: 'nl0', mac: '02:00:00:00:00:01' },
        container: { name: 'eth0', mac: '02:00:00:00:00:02' },
      }),
      deactivateAttachment: async () => undefined,
    },
    nodeTaskQueue(node),
  );
});
afterAll(async () => t?.close());

/** The commands of the workflow task that accepted this update, in order. */
function commandsOfTaskAccepting(events: HistoryEvent[], updateId: string): string[] {
  const accepted = events.findIndex(
    (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.protocolInstanceId === updateId,
  );
  let first = accepted;
  while (first > 0 && COMMAND_EVENTS.has(eventName(events[first - 1] ?? {}))) first--;
  let end = accepted;
  while (end < events.length && COMMAND_EVENTS.has(eventName(events[end] ?? {}))) end++;
  return events.slice(first, end).map(eventName);
}

const fixtureCommands = ['UPSERT_WORKFLOW_SEARCH_ATTRIBUTES', 'ACTIVITY_TASK_SCHEDULED'];
const deactivateCommands = ['WORKFLOW_EXECUTION_UPDATE_ACCEPTED', 'ACTIVITY_TASK_SCHEDULED'];

test('the soak history: the release ran before the update was accepted; it cannot replay (the SDK accepts first)', async () => {
  const text = readFileSync(
    join(__dirname, '..', '..', '..', 'test', 'fixtures', 'lease-release-and-deactivate.history.json'),
    'utf8',
  );
  const history = historyFromShowJson(text);
  const events = history.events;
  const updateId = 'del/ctr-bd015a80d19b/eth0/16432a3b-51c0-4106-b0ee-83895ac466a0';
  // One task carried both release signals (36, 37) and the update (sequenced after event 39).
  expect(commandsOfTaskAccepting(events, updateId)).toEqual([...fixtureCommands, ...deactivateCommands]);
  // Written by the code before the fix (no patch marker): a replay takes the old path, and the SDK
  // replays the task with the update's acceptance before the signals' continuations.
  expect(await replayErrorOf('fixture', history)).toContain(
    'Update machine does not handle this event: HistoryEvent(id: 42, UpsertWorkflowSearchAttributes)',
  );
});

test.each(['Running', 'Active'] as const)(
  'release signals and a deactivate update in one task, lease %s: the release comes first in every run and the history replays',
  async (phase) => {
    const start = testLeaseStart('order', node, 'ptp');
    const handle = t.env.client.workflow.getHandle(leaseWorkflowId(start.podUid, 'eth0'));
    // A task queue of this case's own: no worker of another case takes its task.
    const taskQueue = uniqueName('tq-wf-order');
    const sandbox = { containerId: 'ctr-1', netns: '/var/run/netns/x', ifName: 'eth0' };
    // The first control worker is cut off before the messages: the next one gets them in one task.
    const held = await heldTask(t.env, taskQueue, control);
    await consumeLease(t.env.client, taskQueue, start, { ...sandbox, terms: termsOf(start) });
    // Active: its stall timer is pending, and the release ends it (the soak's second history).
    if (phase === 'Running') await handle.signal(podRunningSignal);
    await waitForValue(
      () => handle.query(leaseStateQuery),
      (s) => s.phase === phase,
      15_000,
    );
    await held.cut();

    const updateId = uniqueName('del');
    const deactivated = handle.executeUpdate(deactivateUpdate, { args: [sandbox], updateId });
    await held.admitted(handle.workflowId, updateId);
    await handle.signal(releaseSignal, { reason: 'pod gone' });
    await handle.signal(releaseSignal, { reason: 'pod gone' });
    await held.next(handle.workflowId);
    expect(await deactivated).toBe(true);
    expect((await handle.result()).phase).toBe('Released');
    expect(returned.filter((id) => id === handle.workflowId)).toHaveLength(1);

    const events = (await handle.fetchHistory()).events ?? [];
    const signals = events.filter(
      (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'release',
    );
    const accepted = events.find(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.protocolInstanceId === updateId,
    );
    // The task that accepted the update is the one that carried both signals…
    expect(
      signals.map(
        (e) =>
          Number(e.eventId) <
          Number(accepted?.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequestSequencingEventId),
      ),
    ).toEqual([true, true]);
    // …and its commands are the soak's order (the fixture), whichever way the SDK ran the jobs. (No
    // patch marker among them: a one-add-path run has its patches from its first task.)
    expect(commandsOfTaskAccepting(events, updateId)).toEqual([...fixtureCommands, ...deactivateCommands]);

    await held.close();
    await expectReplayed({ client: t.env.client, taskQueue }, 1);
  },
);
