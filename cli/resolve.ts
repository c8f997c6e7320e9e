// `<lease>` arguments: a workflow id (lease/<podUID>/<ifName>), an IP address, a pod
// (namespace/name) or a pod UID, resolved through visibility; open leases before closed ones.
import { z } from 'zod';
import type { LeaseState } from '../domain/lease';
import { leaseStateQuery } from '../workflows/lease-messages';
import { parseAddress } from '../domain/cidr';
import { mapLimited } from '../domain/map-limited';
import { describeLease, leaseExecutions, type LeaseExecution } from '../temporal/visibility';
import { argument, OperationError } from './args';
import type { Context } from './context';

export const LeaseRefSchema = z.string().min(1, 'must not be empty').max(1000, 'at most 1000 characters');

const isAddress = (text: string) => {
  try {
    parseAddress(text);
    return true;
  } catch {
    return false;
  }
};

function conditionOf(ref: string) {
  if (ref.startsWith('lease/')) return { WorkflowId: ref };
  if (isAddress(ref)) return { IPAddresses: ref };
  if (ref.includes('/')) return { PodRef: ref };
  return { PodUID: ref };
}

/** The leases `ref` names: the open ones, or else the latest closed run of each. */
export async function resolveLeases(context: Context, ref: string): Promise<LeaseExecution[]> {
  const all = await confirmed(
    context,
    ref,
    await leaseExecutions(context.client, context.taskQueue, conditionOf(ref)),
  );
  const open = all.filter((e) => e.open);
  if (open.length) return open;
  const latest = new Map<string, LeaseExecution>();
  for (const e of all) if (!latest.has(e.workflowId)) latest.set(e.workflowId, e);
  return [...latest.values()];
}

/**
 * Visibility lags: each run it listed as the workflow has it now (open or closed, its phase), and
 * the current run of each workflow it named (or `ref` names) that it does not list yet, when that
 * run still matches `ref`. Newest first.
 */
async function confirmed(context: Context, ref: string, listed: LeaseExecution[]): Promise<LeaseExecution[]> {
  const { client, taskQueue } = context;
  const runs = await mapLimited(
    listed,
    8,
    async (e) => (await describeLease(client, taskQueue, e.workflowId, e.runId)) ?? e,
  );
  const ids = new Set(listed.map((e) => e.workflowId));
  if (ref.startsWith('lease/')) ids.add(ref);
  const current = await mapLimited([...ids], 8, (id) => describeLease(client, taskQueue, id));
  const matches = (e: LeaseExecution) => !isAddress(ref) || e.addresses.includes(ref);
  for (const run of current)
    if (run && matches(run) && !runs.some((e) => e.runId === run.runId)) runs.push(run);
  return runs.sort((x, y) => y.startTime.getTime() - x.startTime.getTime());
}

/** Exactly one lease, or an error saying what matched. */
export async function resolveLease(
  context: Context,
  value: unknown,
  name = '<lease>',
): Promise<LeaseExecution> {
  const ref = argument(LeaseRefSchema, value, name);
  const found = await resolveLeases(context, ref);
  if (!found.length)
    throw new OperationError(`${name}: no lease on task queue ${context.taskQueue} matches "${ref}"`);
  if (found.length > 1)
    throw new OperationError(
      `${name}: "${ref}" matches ${found.length} leases (${found.map((e) => e.workflowId).join(', ')}); name one by its workflow id`,
    );
  return found[0] as LeaseExecution;
}

/** The lease's state: queried while open, its result once closed (undefined if it failed). */
export async function leaseState(context: Context, lease: LeaseExecution): Promise<LeaseState | undefined> {
  const handle = context.client.workflow.getHandle(lease.workflowId, lease.runId);
  try {
    return lease.open ? await handle.query(leaseStateQuery) : await handle.result();
  } catch {
    return undefined;
  }
}
