// One zod serves every workflow of a worker's V8 context (worker/control/sandbox/shared-zod): the update
// validators of the first workflow, which loads it, and of the ones after, which reuse it, answer
// alike, with zod's English messages naming the field, as zod does outside the sandbox.
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { consumeLease } from '../../cni/consume';
import type { ProduceInput, Produced } from '../../activities/addresses';
import { ActivationPolicySchema, describeIssues } from '../../domain/config';
import { ConsumeSchema, termsOf, type ConsumeRequest, type LeaseStart } from '../../domain/lease';
import { expectReplayed } from '../harness/replay';
import { uniqueName } from '../harness/temporal';
import { workflowTestEnv, type WorkflowTestEnv } from '../harness/workflow-env';

const addresses = [{ family: 4 as const, address: '198.18.0.2', prefixLength: 26, gateway: '198.18.0.1' }];
const policy = ActivationPolicySchema.parse({});

let t: WorkflowTestEnv;
beforeAll(async () => {
  t = await workflowTestEnv('wf-zod');
  await t.worker({
    produceAddresses: async (_: ProduceInput): Promise<Produced> => ({ addresses, activation: policy }),
    returnAddresses: async () => [],
  });
});
afterAll(async () => t?.close());

const startOf = (podUid: string): LeaseStart => ({
  podUid,
  podNamespace: 'ns',
  podName: podUid,
  ifName: 'eth0',
  nodeName: uniqueName('wf-zod-node'),
  pool: 'p',
  mode: 'ipam',
});

const rejection = (err: unknown) =>
  err instanceof WorkflowUpdateFailedError ? (err.cause?.message ?? '') : `not rejected: ${String(err)}`;

test("every workflow's validator rejects a bad ADD with zod's message and accepts a good one", async () => {
  const bad: ConsumeRequest = {
    containerId: '',
    netns: '/var/run/netns/x',
    ifName: 'eth0',
    terms: termsOf(startOf('any')),
  };
  const parsed = ConsumeSchema.safeParse(bad);
  if (parsed.success) throw new Error('the bad request parses');
  const expected = `invalid consume request: ${describeIssues(parsed.error)}`;
  expect(expected).toMatch(/containerId: \S/);
  // Sequentially: the first lease loads zod into the context, the others find it there.
  for (const podUid of [uniqueName('zod-a'), uniqueName('zod-b'), uniqueName('zod-c')]) {
    const start = startOf(podUid);
    const request = { ...bad, terms: termsOf(start) };
    expect(await consumeLease(t.env.client, t.taskQueue, start, request).catch(rejection)).toBe(expected);
    const grant = await consumeLease(t.env.client, t.taskQueue, start, { ...request, containerId: 'ctr-1' });
    expect(grant.addresses).toEqual(addresses);
  }
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed({ client: t.env.client, taskQueue: t.taskQueue }, 3);
});
