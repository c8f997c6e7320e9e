// What an operator presses on a workflow in the Temporal UI or CLI (Reset to the first workflow
// task, a signal's form sent empty or with made-up input), and a node with pods to press them on.
// test/scenario/operator-actions asserts what follows; the history recorder records it.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Scenario } from './scenario';
import { uniqueName } from './temporal';
import { waitForValue } from './wait';

/** The addresses each pod holds, by pod uid. */
export type HeldAddresses = Map<string, string[]>;

/** A node with `count` pods added through the control worker; their addresses, per pod uid. */
export async function nodeWithPods(
  scenario: Scenario,
  prefix: string,
  count: number,
): Promise<{ node: string; held: HeldAddresses; pods: Array<{ name: string; uid: string }> }> {
  const node = uniqueName(prefix);
  await scenario.cluster.createNode(node);
  const held: HeldAddresses = new Map();
  const pods: Array<{ name: string; uid: string }> = [];
  for (let i = 0; i < count; i++) {
    const name = `${prefix}-${i}`;
    const uid = await scenario.cluster.createPod(name, node);
    pods.push({ name, uid });
    held.set(
      uid,
      (await scenario.add(name, uid, node)).map((g) => g.address),
    );
  }
  return { node, held, pods };
}

/** A new pod's addresses (added to `held`); throws if a pod of `held` has one of them. */
export async function addFresh(scenario: Scenario, node: string, held: HeldAddresses): Promise<string[]> {
  const name = uniqueName('fresh');
  const uid = await scenario.cluster.createPod(name, node);
  const addresses = (await scenario.add(name, uid, node)).map((g) => g.address);
  const taken = [...held.values()].flat().filter((a) => addresses.includes(a));
  if (taken.length)
    throw new Error(`a fresh pod on ${node} got addresses a live pod holds: ${taken.join(', ')}`);
  held.set(uid, addresses);
  return addresses;
}

/** Each address of `held` the node's table does not allocate to its own lease, with its owner there. */
export async function misowned(scenario: Scenario, node: string, held: HeldAddresses): Promise<string[]> {
  const table = await waitForValue(
    () => scenario.table(node),
    (t) => t !== undefined,
    30_000,
  );
  const wrong: string[] = [];
  for (const [uid, addresses] of held)
    for (const address of addresses) {
      const owner = table?.allocations[address]?.owner;
      if (owner !== `lease/${uid}/eth0`) wrong.push(`${address}: ${owner ?? 'not allocated'}`);
    }
  return wrong;
}

/**
 * A reset point: the run's first completed workflow task, or the first one after its table was
 * rebuilt (its evidence activity completed): a run reset there has a table its rebuild
 * vouched for in another run, so it answers "unverified" until the control worker asks again.
 */
function resetPoint(client: Client, workflowId: string, point: 'first' | 'afterRebuild') {
  // A run that has just continued-as-new may not have completed its first task yet.
  return waitForValue(
    () => completedTaskOf(client, workflowId, point),
    (eventId) => eventId !== undefined,
    20_000,
    100,
    `${workflowId} with a completed workflow task for a ${point} reset`,
  );
}

async function completedTaskOf(client: Client, workflowId: string, point: 'first' | 'afterRebuild') {
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const evidence = new Set(['nodeTableEvidence', 'poolTableEvidence']);
  const scheduled = events.find((e) =>
    evidence.has(e.activityTaskScheduledEventAttributes?.activityType?.name ?? ''),
  );
  const rebuilt = events.find(
    (e) =>
      e.activityTaskCompletedEventAttributes?.scheduledEventId?.toString() === scheduled?.eventId?.toString(),
  );
  const after = point === 'first' ? 0 : Number(rebuilt?.eventId ?? Number.MAX_SAFE_INTEGER);
  return (
    events.find((e) => e.workflowTaskCompletedEventAttributes && Number(e.eventId) > after)?.eventId ??
    undefined
  );
}

/** What the UI's Reset does, reapplying signals but not updates (its "reapply" boxes). */
export async function resetToStart(
  client: Client,
  workflowId: string,
  point: 'first' | 'afterRebuild' = 'first',
): Promise<void> {
  const { ResetReapplyExcludeType } = temporal.api.enums.v1;
  await client.workflowService.resetWorkflowExecution({
    namespace: client.options.namespace,
    workflowExecution: { workflowId },
    reason: 'operator test',
    workflowTaskFinishEventId: await resetPoint(client, workflowId, point),
    requestId: randomUUID(),
    resetReapplyExcludeTypes: [ResetReapplyExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_UPDATE],
  });
}

/** A signal as the UI's form sends it: no payload at all when `args` is empty, else JSON. */
export async function signalFromForm(
  client: Client,
  workflowId: string,
  signalName: string,
  args: unknown[],
): Promise<void> {
  await client.workflowService.signalWorkflowExecution({
    namespace: client.options.namespace,
    workflowExecution: { workflowId },
    signalName,
    requestId: randomUUID(),
    ...(args.length
      ? {
          input: {
            payloads: args.map((a) => ({
              metadata: { encoding: Buffer.from('json/plain') },
              data: Buffer.from(JSON.stringify(a)),
            })),
          },
        }
      : {}),
  });
}

/** The workflow's failed workflow tasks (a handler that threw would fail every one). */
export async function failedTasks(client: Client, workflowId: string): Promise<unknown[]> {
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  // A reset marks its point with a failed task of its own (cause RESET_WORKFLOW): not a failure.
  const { WorkflowTaskFailedCause } = temporal.api.enums.v1;
  return events.filter(
    (e) =>
      e.workflowTaskFailedEventAttributes &&
      e.workflowTaskFailedEventAttributes.cause !==
        WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW,
  );
}
