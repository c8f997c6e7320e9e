// The durable known set: open lease and node workflows of this control plane (its task queue),
// listed from Temporal visibility, or read one by one by id (a describe: the workflow's own state,
// which visibility trails). Compact facts only.
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { leaseWorkflowId, nodeWorkflowId } from '../domain/ids';
import { LEASE_WORKFLOW_TYPE } from '../workflows/lease-messages';
import { NODE_WORKFLOW_TYPE } from '../workflows/node-messages';
import { POOL_WORKFLOW_TYPE } from '../workflows/pool-messages';
import { unlessGone } from './workflow-gone';

export interface KnownLease {
  workflowId: string;
  podUid: string;
  podRef: string;
  ifName: string;
  phase: string;
}

export interface KnownNode {
  workflowId: string;
  name: string;
  uid: string;
}

/**
 * A string as a visibility query literal: quoted, its backslashes and quotes escaped. A task queue
 * or name from a request is hostile: `\\` alone left unescaped made the list invalid (issue 18's fuzz).
 */
export const queryString = (value: string): string => `'${value.replace(/[\\']/g, (c) => `\\${c}`)}'`;

/** The open pool workflows of the control plane on `taskQueue`. */
export const openPoolsQuery = (taskQueue: string): string =>
  `WorkflowType = '${POOL_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND TaskQueue = ${queryString(taskQueue)}`;

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
  const query = `WorkflowType = '${LEASE_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND TaskQueue = ${queryString(taskQueue)}${extra}`;
  return openWorkflows(client, query, (workflowId, a) => ({
    workflowId,
    podUid: first(a.PodUID),
    podRef: first(a.PodRef),
    ifName: first(a.IfName),
    phase: first(a.LeasePhase),
  }));
}

export function knownNodes(client: Client, taskQueue: string): Promise<KnownNode[]> {
  const query = `WorkflowType = '${NODE_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND TaskQueue = ${queryString(taskQueue)}`;
  return openWorkflows(client, query, (workflowId, a) => ({
    workflowId,
    name: first(a.NodeName),
    uid: first(a.NodeUID),
  }));
}

/**
 * The open leases of a pod on these interfaces, each read by its id `lease/<uid>/<ifName>` (a
 * describe is the workflow's own state, and costs the same however many leases are open; a
 * visibility list grows with them and lags the workflows by a second or more under load).
 */
export async function leasesOfPodById(
  client: Client,
  taskQueue: string,
  podUid: string,
  ifNames: readonly string[],
): Promise<LeaseExecution[]> {
  const read = await Promise.all(
    ifNames.map((ifName) => describeLease(client, taskQueue, leaseWorkflowId(podUid, ifName))),
  );
  return read.filter((lease): lease is LeaseExecution => lease?.open === true && lease.podUid === podUid);
}

/**
 * A node workflow read by its id `node/<name>` (a describe, not visibility): its current
 * incarnation ('' when none). undefined when no node workflow of that name runs on this task queue.
 */
export async function describeNode(
  client: Client,
  taskQueue: string,
  nodeName: string,
): Promise<KnownNode | undefined> {
  const e = await unlessGone(() => client.workflow.getHandle(nodeWorkflowId(nodeName)).describe(), undefined);
  if (!e || e.type !== NODE_WORKFLOW_TYPE || e.taskQueue !== taskQueue || e.status.name !== 'RUNNING')
    return undefined;
  const a = e.searchAttributes as Record<string, unknown>;
  return { workflowId: e.workflowId, name: nodeName, uid: first(a.NodeUID) };
}

export const leasesOfNode = (client: Client, taskQueue: string, nodeName: string) =>
  knownLeases(client, taskQueue, ` AND NodeName = ${queryString(nodeName)}`);

/** A lease workflow run as visibility lists it, open or closed (for operators). */
export interface LeaseExecution {
  workflowId: string;
  runId: string;
  open: boolean;
  startTime: Date;
  closeTime?: Date;
  podUid: string;
  podRef: string;
  ifName: string;
  nodeName: string;
  phase: string;
  addresses: string[];
}

const quoted = (value: string) => `'${value.replace(/['\\]/g, '')}'`;

/** The compact facts of a run, from a listing or a describe. */
function executionOf(e: Omit<WorkflowExecutionInfo, 'raw'>): LeaseExecution {
  const a = e.searchAttributes as Record<string, unknown>;
  return {
    workflowId: e.workflowId,
    runId: e.runId,
    open: e.status.name === 'RUNNING',
    startTime: e.startTime,
    ...(e.closeTime ? { closeTime: e.closeTime } : {}),
    podUid: first(a.PodUID),
    podRef: first(a.PodRef),
    ifName: first(a.IfName),
    nodeName: first(a.NodeName),
    phase: first(a.LeasePhase),
    addresses: Array.isArray(a.IPAddresses) ? a.IPAddresses.map(String) : [],
  };
}

/**
 * A lease run as the workflow itself has it now (a describe reads its state, not visibility,
 * which lags): the current run without `runId`. undefined when there is no such lease workflow
 * on this task queue.
 */
export async function describeLease(
  client: Client,
  taskQueue: string,
  workflowId: string,
  runId?: string,
): Promise<LeaseExecution | undefined> {
  const e = await unlessGone(() => client.workflow.getHandle(workflowId, runId).describe(), undefined);
  return e && e.type === LEASE_WORKFLOW_TYPE && e.taskQueue === taskQueue ? executionOf(e) : undefined;
}

/** Lease runs on this task queue matching the conditions (search attribute → value), newest first. */
export async function leaseExecutions(
  client: Client,
  taskQueue: string,
  where: {
    open?: boolean;
    PodUID?: string;
    PodRef?: string;
    NodeName?: string;
    LeasePhase?: string;
    IPAddresses?: string;
    WorkflowId?: string;
  } = {},
): Promise<LeaseExecution[]> {
  const { open, ...attributes } = where;
  const conditions = [`WorkflowType = 'leaseWorkflow'`, `TaskQueue = ${quoted(taskQueue)}`];
  if (open !== undefined)
    conditions.push(open ? `ExecutionStatus = 'Running'` : `ExecutionStatus != 'Running'`);
  for (const [key, value] of Object.entries(attributes))
    if (value !== undefined) conditions.push(`${key} = ${quoted(value)}`);
  const rows: LeaseExecution[] = [];
  for await (const e of client.workflow.list({ query: conditions.join(' AND ') })) rows.push(executionOf(e));
  return rows.sort((x, y) => y.startTime.getTime() - x.startTime.getTime());
}

export function knownPools(client: Client, taskQueue: string): Promise<string[]> {
  const query = `WorkflowType = 'poolWorkflow' AND ExecutionStatus = 'Running' AND TaskQueue = ${quoted(taskQueue)}`;
  return openWorkflows(client, query, (workflowId) => workflowId);
}
