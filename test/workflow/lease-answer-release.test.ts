// A confirmAnswer and a release in one workflow task, in either order (issue 25 item 4): the node
// agent answered an ADD from its offer and made the interface, and the pod was deleted before the
// confirmation reached the lease. Whichever the lease handles first, the release removes the
// answered sandbox's interface and gives the addresses back once, and the history replays.
import type { Produced } from '../../activities/addresses';
import type { AttachmentInput } from '../../domain/dataplane';
import { ActivationPolicySchema } from '../../domain/config';
import { nodeTaskQueue } from '../../domain/dataplane';
import { confirmAnswerUpdateId, leaseWorkflowId } from '../../domain/ids';
import {
  confirmAnswerUpdate,
  LEASE_WORKFLOW_TYPE,
  leaseStateQuery,
  offerUpdate,
  releaseSignal,
} from '../../workflows/lease-messages';
import { expectReplayed } from '../harness/replay';
import { uniqueName } from '../harness/temporal';
import { heldTask } from '../harness/one-task';
import { waitForValue } from '../harness/wait';
import { workflowTestEnv, type WorkflowTestEnv, testLeaseStart } from '../harness/workflow-env';

const node = uniqueName('wf-answer-node');
const addresses = [{ family: 4 as const, address: '198.18.0.2', prefixLength: 26, gateway: '198.18.0.1' }];
const returned: string[] = [];
const deactivated: string[] = [];
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
  t = await workflowTestEnv('wf-answer');
  await t.worker(
    {
      activateAttachment: async () => {
        throw new Error('the agent made the interface itself: activation is not asked for');
      },
      deactivateAttachment: async (input: AttachmentInput) =>
        void deactivated.push(input.attachment.containerId),
      // The agent's record is gone by the time the lease asks (it saw the refusal first).
      revokeOffer: async () => null,
    },
    nodeTaskQueue(node),
  );
});
afterAll(async () => t?.close());

test.each(['release first', 'answer first'] as const)(
  'a confirmAnswer and a release in one task (%s): the interface is removed, the addresses go back once',
  async (order) => {
    const start = testLeaseStart('answer', node, 'ptp');
    const workflowId = leaseWorkflowId(start.podUid, 'eth0');
    const taskQueue = uniqueName('tq-wf-answer');
    // The first control worker is cut off before the messages: the next one gets them in one task.
    const held = await heldTask(t.env, taskQueue, control);
    const handle = await t.env.client.workflow.start(LEASE_WORKFLOW_TYPE, {
      workflowId,
      taskQueue,
      args: [start],
    });
    const offer = await handle.executeUpdate(offerUpdate);
    await waitForValue(
      () => handle.query(leaseStateQuery),
      (s) => s.phase === 'Produced',
      15_000,
    );
    await held.cut();

    const sandbox = {
      containerId: `ctr-${order.replace(' ', '-')}`,
      netns: '/var/run/netns/x',
      ifName: 'eth0',
    };
    const answer = {
      ...sandbox,
      links: {
        host: { name: 'nl0000000000001', mac: '02:00:00:00:00:01' },
        container: { name: 'eth0', mac: '02:00:00:00:00:02', sandbox: sandbox.netns },
      },
    };
    const updateId = confirmAnswerUpdateId(sandbox.containerId, 'eth0', offer.run);
    const release = () => handle.signal(releaseSignal, { reason: 'pod deleted' });
    let confirmed: Promise<unknown> = Promise.resolve();
    const confirm = async () => {
      confirmed = handle
        .executeUpdate(confirmAnswerUpdate, { args: [answer], updateId })
        .catch((e: unknown) => e);
      await held.admitted(workflowId, updateId);
    };
    if (order === 'release first') {
      await release();
      await confirm();
    } else {
      await confirm();
      await release();
    }
    await held.next(workflowId);
    const result = await handle.result();
    await confirmed;
    expect(result.phase).toBe('Released');
    expect(result.attachments).toEqual([]);
    expect(deactivated.filter((id) => id === sandbox.containerId).length).toBeGreaterThanOrEqual(1);
    expect(returned.filter((id) => id === workflowId)).toHaveLength(1);

    await held.close();
    await expectReplayed({ client: t.env.client, taskQueue }, 1);
  },
);
