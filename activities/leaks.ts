// Addresses whose lease workflow closed without returning them (terminated or reset from the UI,
// failed, timed out) are collected (issue 25 item 6), the way release follows the pod: a pod that
// is gone gives its addresses back to the node (after the cooldown); a pod that still runs gets
// its lease started again with what the closed run held, so its address is never handed to another.
import type { Client } from '@temporalio/client';
import type { Allocation } from '../domain/allocation';
import type { NetleaseConfig } from '../domain/config';
import { leaseWorkflowId, madeByHand, nodeWorkflowId, releaseUpdateId } from '../domain/ids';
import { isTerminal, type PodFact } from '../domain/k8s';
import type { LeaseState } from '../domain/lease';
import { leaseRunFromHistory, type HeldAttachment } from '../temporal/lease-history';
import { leaseStartOptions } from '../temporal/leases';
import { unlessGone } from '../temporal/workflow-gone';
import { LEASE_WORKFLOW_TYPE, leaseStateQuery } from '../workflows/lease-messages';
import { batchUpdate, nodeStateQuery } from '../workflows/node-messages';
import { leakedAddressesCollected, leasesRecovered } from '../observability/control-metrics';

/** A table owner whose lease workflow is closed. */
export interface Leak {
  node: string;
  owner: string;
  pool: string;
  podUid: string;
  /** The closed run, and how it closed. */
  run: string;
  status: string;
}

/** The owners of every open node's tables whose lease workflow is not open (by id, not visibility). */
export async function findLeaks(client: Client, nodes: string[], openLeases: Set<string>): Promise<Leak[]> {
  const leaks: Leak[] = [];
  for (const node of nodes) {
    const state = await unlessGone(
      () => client.workflow.getHandle(nodeWorkflowId(node)).query(nodeStateQuery),
      undefined,
    );
    const owners = new Map<string, { pool: string; allocation: Allocation }>();
    for (const [pool, table] of Object.entries(state?.tables ?? {}))
      for (const allocation of Object.values(table.allocations))
        if (!openLeases.has(allocation.owner)) owners.set(allocation.owner, { pool, allocation });
    for (const [owner, { pool, allocation }] of owners) {
      const run = await unlessGone(() => client.workflow.getHandle(owner).describe(), undefined);
      if (run?.status.name === 'RUNNING') continue; // visibility had not listed it yet
      leaks.push({
        node,
        owner,
        pool,
        podUid: allocation.podUid,
        run: run?.runId ?? 'none',
        status: run?.status.name ?? 'NOT_FOUND',
      });
    }
  }
  return leaks;
}

/** Whether the leak's pod still exists (from the quorum list): then its lease is started again. */
export const podLives = (leak: Leak, pods: Map<string, PodFact>): boolean => {
  if (madeByHand(leak.podUid)) return false; // no pod: the operator ended it
  const pod = pods.get(leak.podUid);
  return pod !== undefined && !isTerminal(pod.phase);
};

/** The leaked addresses go back to their node, cooling down first. */
export async function collectLeak(client: Client, config: NetleaseConfig, leak: Leak): Promise<void> {
  const id = releaseUpdateId(leak.owner, `leaked-${leak.run}`);
  const outcomes = await client.workflow.getHandle(nodeWorkflowId(leak.node)).executeUpdate(batchUpdate, {
    args: [
      [
        {
          kind: 'release',
          id,
          request: { owner: leak.owner, pool: leak.pool, cooldownMs: config.reuseCooldownSeconds * 1000 },
        },
      ],
    ],
    updateId: `collect/${id}`,
  });
  const grants = outcomes[0] && 'grants' in outcomes[0] ? outcomes[0].grants : [];
  leakedAddressesCollected.inc({ pool: leak.pool }, grants.length);
}

/**
 * The lease of a living pod closed without a release: a new run of it, with the closed run's
 * sandboxes, takes its addresses back (the node gives an owner the addresses it holds). What the
 * closed run held is asked of it (a query), or read from its history when it cannot answer (a
 * history the worker cannot replay: a lease ended because its workflow task failed for good).
 * False when neither names this lease (then it is left to the operator: `netleasectl check`).
 */
export async function recoverLease(
  client: Client,
  taskQueue: string,
  leak: Leak,
  pod: PodFact,
): Promise<boolean> {
  const closed = await heldByClosedRun(client, leak);
  if (!closed || leaseWorkflowId(closed.start.podUid, closed.start.ifName) !== leak.owner) return false;
  const attachments = closed.attachments.map(({ status: _status, ...sandbox }) => sandbox);
  await client.workflow.start(LEASE_WORKFLOW_TYPE, {
    ...leaseStartOptions(taskQueue, closed.start),
    args: [
      closed.start,
      {
        attachments,
        podRunning: pod.phase === 'Running',
        reason: `run ${leak.run} ${leak.status} while pod ${pod.namespace}/${pod.name} runs`,
      },
    ],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  leasesRecovered.inc();
  return true;
}

type Held = Pick<LeaseState, 'start'> & { attachments: Array<HeldAttachment & { status?: string }> };

/** The closed run's start and sandboxes: its own answer, else its history's. */
async function heldByClosedRun(client: Client, leak: Leak): Promise<Held | undefined> {
  const handle = client.workflow.getHandle(leak.owner, leak.run);
  const answered = await handle.query(leaseStateQuery).catch(() => undefined);
  if (answered) return answered;
  return leaseRunFromHistory(client, leak.owner, leak.run).catch(() => undefined);
}
