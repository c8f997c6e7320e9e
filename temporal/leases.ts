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

/** Inline markdown code; a backtick in a value (a UID from CNI_ARGS can hold one) would end it. */
const code = (value: string) => `\`${value.replace(/`/g, "'")}\``;

const MODE_NOTE: Record<LeaseStart['mode'], string> = {
  ptp: 'the node agent makes the interface',
  ipam: 'addresses only, the main plugin makes the interface',
};

/**
 * The lease's "Details" in the UI (markdown, fixed at start; the UI's panel shows about four
 * lines, so four short bullets): what the lease is for, and what an operator can send it.
 */
export function staticDetailsOf(start: LeaseStart): string {
  const pod = start.podName
    ? `${code(`${start.podNamespace}/${start.podName}`)} · UID ${code(start.podUid)}`
    : `UID ${code(start.podUid)} (no pod name: made by hand)`;
  const network = start.network ? ` · **Network** ${code(start.network)}` : '';
  return [
    `- **Pod** ${pod}`,
    `- **Node** ${code(start.nodeName)} · **Interface** ${code(start.ifName)} · **Pool** ${code(start.pool)}`,
    `- **Mode** ${code(start.mode)}: ${MODE_NOTE[start.mode]}${network}`,
    '- **Signals** `retry` (no input), `release` `{"reason":"manual"}`',
  ].join('\n');
}

export function leaseStartOptions(taskQueue: string, start: LeaseStart) {
  return {
    workflowId: leaseWorkflowId(start.podUid, start.ifName),
    taskQueue,
    args: [start] as [LeaseStart],
    staticSummary: summaryOf(start),
    staticDetails: staticDetailsOf(start),
    typedSearchAttributes: [
      { key: PodUID, value: start.podUid },
      { key: PodRef, value: podRef(start) },
      { key: IfName, value: start.ifName },
      { key: NodeName, value: start.nodeName },
      { key: LeasePhase, value: 'Producing' },
    ],
  } satisfies Partial<WorkflowStartOptions>;
}
