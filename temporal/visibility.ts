// The durable known set: open lease and node workflows of this control plane (its task queue),
// read from Temporal visibility. Compact facts only.
import type { Client } from '@temporalio/client';

export interface KnownLease {
  workflowId: string;
  podUid: string;
  podRef: string;
  phase: string;
}

export interface KnownNode {
  workflowId: string;
  name: string;
  uid: string;
}

const first = (value: unknown): string => (Array.isArray(value) ? String(value[0] ?? '') : '');

/** Open workflows of one type on this control plane's task queue, mapped to compact facts. */
async function openWorkflows<T>(
  client: Client,
  query: string,
  fact: (workflowId: string, attributes: Record<string, unknown>) => T,
): Promise<T[]> {
  const facts: T[] = [];
  for await (const execution of client.workflow.list({ query })) {
    facts.push(fact(execution.workflowId, execution.searchAttributes as Record<string, unknown>));
  }
  return facts;
}

export function knownLeases(client: Client, taskQueue: string, extra = ''): Promise<KnownLease[]> {
  const query = `WorkflowType = 'leaseWorkflow' AND ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue}'${extra}`;
  return openWorkflows(client, query, (workflowId, a) => ({
    workflowId,
    podUid: first(a.PodUID),
    podRef: first(a.PodRef),
    phase: first(a.LeasePhase),
  }));
}

export function knownNodes(client: Client, taskQueue: string): Promise<KnownNode[]> {
  const query = `WorkflowType = 'nodeWorkflow' AND ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue}'`;
  return openWorkflows(client, query, (workflowId, a) => ({
    workflowId,
    name: first(a.NodeName),
    uid: first(a.NodeUID),
  }));
}

export const leasesOfPod = (client: Client, taskQueue: string, podUid: string) =>
  knownLeases(client, taskQueue, ` AND PodUID = '${podUid.replace(/'/g, '')}'`);

export const leasesOfNode = (client: Client, taskQueue: string, nodeName: string) =>
  knownLeases(client, taskQueue, ` AND NodeName = '${nodeName.replace(/'/g, '')}'`);
