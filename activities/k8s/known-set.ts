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

export async function knownLeases(client: Client, taskQueue: string, extra = ''): Promise<KnownLease[]> {
  const leases: KnownLease[] = [];
  const query = `WorkflowType = 'leaseWorkflow' AND ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue}'${extra}`;
  for await (const execution of client.workflow.list({ query })) {
    const attributes = execution.searchAttributes;
    leases.push({
      workflowId: execution.workflowId,
      podUid: first(attributes.PodUID),
      podRef: first(attributes.PodRef),
      phase: first(attributes.LeasePhase),
    });
  }
  return leases;
}

export async function knownNodes(client: Client, taskQueue: string): Promise<KnownNode[]> {
  const nodes: KnownNode[] = [];
  const query = `WorkflowType = 'nodeWorkflow' AND ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue}'`;
  for await (const execution of client.workflow.list({ query })) {
    const attributes = execution.searchAttributes;
    nodes.push({
      workflowId: execution.workflowId,
      name: first(attributes.NodeName),
      uid: first(attributes.NodeUID),
    });
  }
  return nodes;
}

export const leasesOfPod = (client: Client, taskQueue: string, podUid: string) =>
  knownLeases(client, taskQueue, ` AND PodUID = '${podUid.replace(/'/g, '')}'`);
