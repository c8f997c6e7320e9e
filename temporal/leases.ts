// How a lease workflow is started, the same whether a CNI ADD starts it or the node agent
// pre-produces it for a pod bound to its node: one id per pod interface, so the two meet.
import type { WorkflowStartOptions } from '@temporalio/client';
import { leaseWorkflowId } from '../domain/ids';
import type { LeaseStart } from '../domain/lease';
import { IfName, LeasePhase, NodeName, PodRef, PodUID } from '../domain/search-attributes';

export const podRef = (start: LeaseStart): string =>
  start.podName ? `${start.podNamespace}/${start.podName}` : start.podUid;

/** What the UI lists a lease by; kept short (names can be long, summaries are small). */
const summaryOf = (start: LeaseStart) =>
  `${podRef(start)} ${start.ifName} on ${start.nodeName}`.slice(0, 200);

export function leaseStartOptions(taskQueue: string, start: LeaseStart) {
  return {
    workflowId: leaseWorkflowId(start.podUid, start.ifName),
    taskQueue,
    args: [start] as [LeaseStart],
    staticSummary: summaryOf(start),
    typedSearchAttributes: [
      { key: PodUID, value: start.podUid },
      { key: PodRef, value: podRef(start) },
      { key: IfName, value: start.ifName },
      { key: NodeName, value: start.nodeName },
      { key: LeasePhase, value: 'Producing' },
    ],
  } satisfies Partial<WorkflowStartOptions>;
}
