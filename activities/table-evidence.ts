// What the node and pool workflows decide on, read where it lives: the Node's UID and the pods
// bound to the node (quorum reads: release follows the pod), and, for a table rebuild, every open
// lease of the node as it holds itself (by id and query, not visibility alone), the blocks the
// pools record (once each pool's own table is vouched for), and for a pool the blocks the nodes'
// tables and the leases' addresses hold, and its last run's record for a node that rebuilds too.
import { Context } from '@temporalio/activity';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { madeByHand } from '../domain/ids';
import { isTerminal } from '../domain/k8s';
import { askedAddresses, FailureType } from '../domain/lease';
import type { PoolSpec } from '../domain/config';
import {
  impliedBlock,
  type BlockEvidence,
  type HeldBlockEvidence,
  type LeaseEvidence,
  type NodeEvidence,
  type PoolEvidence,
} from '../domain/table-rebuild';
import { contains, parseAddress, parsePrefix } from '../domain/cidr';
import { knownNodes, leaseExecutions, leasesOfNode, queryString } from '../temporal/visibility';
import { nodeStateQuery, type NodeState } from '../workflows/node-messages';
import { unlessGone } from '../temporal/workflow-gone';
import { LEASE_WORKFLOW_TYPE, leaseStateQuery } from '../workflows/lease-messages';
import type { ClusterReader } from '../kubernetes/cluster-reader';
import { poolStateQuery, rebuildPoolUpdate, type PoolState } from '../workflows/pool-messages';
import { beating } from './beating';
import type { BlockTable } from '../domain/blocks';
import { nodeWorkflowId, poolWorkflowId } from '../domain/ids';
import type { ControlDeps } from './deps';
import { pauseAfter } from '../kernel/failpoint';
import { isPinnedBlock } from '../domain/static-addresses';

export interface PodsToJudge {
  nodeName: string;
  pods: Array<{ owner: string; podUid: string }>;
}

export interface PodVerdict {
  /** Owners whose pod still exists (or that have no pod to ask about: made by hand). */
  alive: string[];
  gone: Array<{ owner: string; reason: string }>;
}

export interface NodeEvidenceRequest {
  nodeName: string;
  /** Owners the table has now (read by id: visibility may not list a lease yet). */
  owners: string[];
  /** Pools the table knows; the configured ones are read as well. */
  pools: string[];
  /** The run the evidence is for, echoed in the answer (workflows/node/rebuild). */
  forRun?: string;
}

const beat = () => Context.current().heartbeat();

/** Closed runs that still hold addresses: ended without the release returning them. */
const CLOSED_HOLDING = `ExecutionStatus IN ('Terminated', 'Failed', 'TimedOut')`;

/**
 * The leases of the node whose latest run closed without a release (terminated from the UI,
 * failed, timed out) while their pod still exists: as their closed run holds itself. Their
 * addresses stay the pod's; the reconciler starts the lease again with them (activities/leaks).
 * A table rebuilt without them handed them to the next pod (the soak's answer history).
 */
async function closedLeasesOfLivingPods(
  client: Client,
  reader: ClusterReader,
  taskQueue: string,
  nodeName: string,
  seen: Set<string>,
): Promise<LeaseEvidence[]> {
  const query = `WorkflowType = '${LEASE_WORKFLOW_TYPE}' AND TaskQueue = ${queryString(taskQueue)} AND NodeName = ${queryString(nodeName)} AND ${CLOSED_HOLDING}`;
  const candidates = new Set<string>();
  for await (const e of client.workflow.list({ query }))
    if (!seen.has(e.workflowId)) candidates.add(e.workflowId);
  if (candidates.size === 0) return [];
  const living = new Set(
    (await reader.listPodsOnNode(nodeName)).filter((p) => !isTerminal(p.phase)).map((p) => p.uid),
  );
  const held: LeaseEvidence[] = [];
  for (const leaseId of candidates) {
    const handle = client.workflow.getHandle(leaseId);
    const latest = await unlessGone(() => handle.describe(), undefined);
    if (!latest || !['TERMINATED', 'FAILED', 'TIMED_OUT'].includes(latest.status.name)) continue;
    const state = await handle.query(leaseStateQuery).catch(() => undefined);
    if (!state || state.phase === 'Released' || !living.has(state.start.podUid)) continue;
    held.push({
      owner: leaseId,
      podUid: state.start.podUid,
      pool: state.start.pool,
      addresses: state.addresses.map((a) => a.address),
      asked: askedAddresses(state.start),
    });
    beat();
  }
  return held;
}

/** A lease as it holds itself now: its state if open, undefined when its workflow is closed or absent. */
async function leaseNow(client: Client, leaseId: string): Promise<LeaseEvidence | undefined> {
  const handle = client.workflow.getHandle(leaseId);
  const open = await unlessGone(async () => (await handle.describe()).status.name === 'RUNNING', false);
  if (!open) return undefined;
  const state = await unlessGone(() => handle.query(leaseStateQuery), undefined);
  if (!state) return undefined;
  return {
    owner: leaseId,
    podUid: state.start.podUid,
    pool: state.start.pool,
    // Released: its addresses went back already. A releasing lease holds them until its return.
    addresses: state.phase === 'Released' ? [] : state.addresses.map((a) => a.address),
    asked: askedAddresses(state.start),
  };
}

export function tableEvidenceActivities({ client, config, reader }: ControlDeps) {
  return {
    /** The Node's UID by a quorum read (undefined: no Node of that name); `cluster: false` without one. */
    async readNodeIncarnation({
      nodeName,
    }: {
      nodeName: string;
    }): Promise<{ cluster: boolean; uid?: string }> {
      if (!reader) return { cluster: false };
      const uid = await reader.nodeUid(nodeName);
      return uid === undefined ? { cluster: true } : { cluster: true, uid };
    },

    /** Which leases' pods are gone (absent from a quorum list of the node's pods, or terminal). */
    async judgePods({ nodeName, pods }: PodsToJudge): Promise<PodVerdict> {
      if (!reader) return { alive: pods.map((p) => p.owner), gone: [] };
      const bound = new Map((await reader.listPodsOnNode(nodeName)).map((p) => [p.uid, p]));
      const verdict: PodVerdict = { alive: [], gone: [] };
      for (const { owner, podUid } of pods) {
        const pod = bound.get(podUid);
        if (madeByHand(podUid))
          verdict.alive.push(owner); // no pod to ask: kept until released by hand
        else if (!pod) verdict.gone.push({ owner, reason: `pod uid ${podUid} no longer exists` });
        else if (isTerminal(pod.phase))
          verdict.gone.push({ owner, reason: `pod ${pod.namespace}/${pod.name} is ${pod.phase}` });
        else verdict.alive.push(owner);
      }
      // Test-only (the soak): compensation's verdict read, not yet acted on (pods may go meanwhile).
      await pauseAfter('pods-judged');
      return verdict;
    },

    /** The evidence a node table is rebuilt from (domain/table-rebuild). */
    async nodeTableEvidence({ nodeName, owners, pools, forRun }: NodeEvidenceRequest): Promise<NodeEvidence> {
      const { taskQueue } = config.temporal;
      const listed = (await leasesOfNode(client, taskQueue, nodeName)).map((l) => l.workflowId);
      const leases: LeaseEvidence[] = [];
      const closed: string[] = [];
      for (const leaseId of new Set([...listed, ...owners])) {
        const lease = await leaseNow(client, leaseId);
        if (lease) leases.push(lease);
        else if (owners.includes(leaseId)) closed.push(leaseId);
        beat();
      }
      // With a cluster to ask whether their pods exist: closed leases that still hold addresses.
      if (reader) {
        const seen = new Set(leases.map((l) => l.owner));
        leases.push(...(await closedLeasesOfLivingPods(client, reader, taskQueue, nodeName, seen)));
      }
      const names = new Set([...pools, ...config.pools.map((p) => p.name)]);
      const blocks: BlockEvidence[] = [];
      for (const pool of names) {
        const state = await vouchedPoolState(client, pool);
        for (const [cidr, owner] of Object.entries(state?.blocks ?? {}))
          if (owner.node === nodeName) blocks.push({ pool, cidr, incarnation: owner.incarnation });
        beat();
      }
      const specs = config.pools.filter((p) => names.has(p.name));
      return { pools: specs, blocks, leases, closed, cooldownMs: config.reuseCooldownSeconds * 1000, forRun };
    },

    /**
     * The evidence a pool's block table is rebuilt from: each open node workflow's blocks of the
     * pool, and the block of each open lease's address in it (a node whose table is lost as well).
     */
    async poolTableEvidence({ pool, forRun }: { pool: string; forRun?: string }): Promise<PoolEvidence> {
      const { taskQueue } = config.temporal;
      const held: HeldBlockEvidence[] = [];
      const spec = config.pools.find((p) => p.name === pool);
      const closed = await closedRunRecord(await lastClosedRun(client, pool, forRun));
      const recorded = closed.blocks;
      /** Owners of the addresses of pinned blocks: their leases may be a sticky ordinal's. */
      const pinnedOwners = new Set<string>();
      /** Nodes whose table is not vouched for (it rebuilds, or a reset run's): see below. */
      const unvouched = new Set<string>();
      const listed = (await knownNodes(client, taskQueue)).map((n) => n.name);
      for (const name of new Set([...listed, ...Object.values(recorded).map((o) => o.node)])) {
        const state = await nodeStateOf(client, name, listed.includes(name));
        if (state === 'unreadable' || state?.trustCarried === false) unvouched.add(name);
        if (state === 'unreadable') continue;
        const table = state?.tables[pool];
        for (const block of table?.blocks ?? []) {
          held.push({ cidr: block.cidr, node: name, incarnation: block.incarnation });
          const owner = table?.allocations[block.cidr.split('/')[0] ?? '']?.owner;
          if (spec && owner && isPinnedBlock(spec, block.cidr)) pinnedOwners.add(owner);
        }
        beat();
      }
      held.push(...recordedForUnvouched(recorded, unvouched, held));
      const reservations = {
        ...closed.reservations,
        ...(await stickyReservationsOf(client, pinnedOwners)),
      };
      if (!spec) return { held, forRun, reservations };
      held.push(...(await blocksOfLeasesOnly(client, taskQueue, spec, held)));
      return { held, forRun, reservations };
    },
  };
}

/**
 * The blocks of open leases' addresses in the pool that no node table covers (a node whose table is
 * lost as well), each as the lease got it: an address it asked for by name, its pinned block only.
 */
async function blocksOfLeasesOnly(
  client: Client,
  taskQueue: string,
  spec: PoolSpec,
  tables: HeldBlockEvidence[],
): Promise<HeldBlockEvidence[]> {
  const prefixes = spec.cidrs.map((c) => parsePrefix(c));
  const found: HeldBlockEvidence[] = [];
  const covered = (address: string) => {
    const { family, value } = parseAddress(address);
    return [...tables, ...found].some((h) => contains(parsePrefix(h.cidr), family, value));
  };
  const uncovered = (address: string) => {
    const { family, value } = parseAddress(address);
    return prefixes.some((p) => contains(p, family, value)) && !covered(address);
  };
  for (const listed of await leaseExecutions(client, taskQueue, { open: true })) {
    if (!listed.addresses.some(uncovered)) continue;
    // Its own state decides: visibility lists a released lease's addresses until its run closes
    // (the 10,000 soak: a sticky pod's pinned block claimed after it went back, fenced for good).
    const lease = await leaseNow(client, listed.workflowId);
    for (const address of lease ? lease.addresses.filter(uncovered) : []) {
      const cidr = impliedBlock(spec, address, lease?.asked);
      found.push({ cidr, node: listed.nodeName, incarnation: '' });
    }
    beat();
  }
  return found;
}

/**
 * A node's state as its latest run holds it, by id, open or closed (a run terminated a moment
 * ago is rebuilt from this pool); undefined: no such workflow. A node listed open that does not
 * answer fails the evidence (asked again); one only the closed pool run names is `unreadable`
 * then (a run ended because its history could not be replayed cannot answer, ever).
 */
async function nodeStateOf(
  client: Client,
  name: string,
  listedOpen: boolean,
): Promise<NodeState | 'unreadable' | undefined> {
  const read = () =>
    unlessGone(() => client.workflow.getHandle(nodeWorkflowId(name)).query(nodeStateQuery), undefined);
  if (listedOpen) return read();
  return read().catch(() => 'unreadable' as const);
}

/** The pool's latest closed run other than `forRun` (a terminated run, or the one a reset started from). */
async function lastClosedRun(
  client: Client,
  pool: string,
  forRun: string | undefined,
): Promise<WorkflowHandle | undefined> {
  const runs: Array<{ runId: string; closeTime: number }> = [];
  const query = `WorkflowId = ${queryString(poolWorkflowId(pool))} AND ExecutionStatus != 'Running'`;
  for await (const e of client.workflow.list({ query }))
    if (e.runId !== forRun) runs.push({ runId: e.runId, closeTime: e.closeTime?.getTime() ?? 0 });
  const last = runs.sort((a, b) => b.closeTime - a.closeTime)[0];
  return last && client.workflow.getHandle(poolWorkflowId(pool), last.runId);
}

/** What a closed pool run recorded when it closed: its blocks and sticky reservations. */
interface ClosedRunRecord {
  blocks: BlockTable;
  reservations: Record<string, string[]>;
}

/**
 * What the closed run recorded as it held it when it closed (one query of a closed run replays
 * it); nothing when there is no such run, or it cannot answer (a history this code cannot replay:
 * the nodes' tables and the leases are read alone).
 */
async function closedRunRecord(run: WorkflowHandle | undefined): Promise<ClosedRunRecord> {
  if (!run) return { blocks: {}, reservations: {} };
  try {
    const state = await run.query(poolStateQuery);
    const reservations = Object.entries(state.reservations ?? {}).map(([key, r]) => [key, r.addresses]);
    return { blocks: state.blocks, reservations: Object.fromEntries(reservations) };
  } catch (err) {
    Context.current().log.warn('the last closed pool run did not answer', { error: String(err) });
    return { blocks: {}, reservations: {} };
  }
}

/**
 * The blocks the closed run recorded for nodes whose own table the rebuild cannot vouch for and
 * that no node's table holds. Such a node rebuilds from this pool (node/rebuild waits for it): it
 * read, or will read, what the closed run recorded, so the rebuilt pool records it too. Without it
 * the pool and a node rebuilt at once lost a block the node kept (two nodes could get it), or kept
 * one the node lost (a sticky pod fenced for good: the short soak of seed 821898649).
 */
function recordedForUnvouched(
  recorded: BlockTable,
  unvouched: Set<string>,
  held: HeldBlockEvidence[],
): HeldBlockEvidence[] {
  const inTables = new Set(held.map((h) => h.cidr));
  return Object.entries(recorded)
    .filter(([cidr, owner]) => unvouched.has(owner.node) && !inTables.has(cidr))
    .map(([cidr, owner]) => ({ cidr, node: owner.node, incarnation: owner.incarnation }));
}

/**
 * A pool's state once its block table is vouched for. A pool that rebuilds its blocks (a run
 * started again after a terminate; a reset run) answers from a half-built table: a node table
 * rebuilt from it lacked a block the pool then recorded for the node, and nobody returned it.
 * Such a pool is asked to rebuild for its run (joined if under way, as the control worker's
 * requests are: activities/rebuild-requests), and read again once it is done. Undefined: no such pool.
 */
async function vouchedPoolState(client: Client, pool: string): Promise<PoolState | undefined> {
  const handle = client.workflow.getHandle(poolWorkflowId(pool));
  const state = await unlessGone(() => handle.query(poolStateQuery), undefined);
  if (state?.trustCarried !== false) return state;
  const { runId } = await handle.describe();
  await beating(() =>
    client.workflow
      .getHandle(poolWorkflowId(pool), runId)
      .executeUpdate(rebuildPoolUpdate, { args: [{ forRun: runId }], updateId: `rebuild/${runId}` }),
  ).catch(() => undefined); // a run closed meanwhile: read again below
  const rebuilt = await unlessGone(() => handle.query(poolStateQuery), undefined);
  if (rebuilt?.trustCarried !== false) return rebuilt;
  throw ApplicationFailure.retryable(
    `pool ${pool} is rebuilding its blocks; the node's table is rebuilt once it is done`,
    FailureType.tableRebuilding,
  );
}

/**
 * The sticky reservations the leases holding pinned addresses were made for, from each one's own
 * start (a pool run that lost its reservations gets back those its pods hold now).
 */
async function stickyReservationsOf(client: Client, owners: Set<string>): Promise<Record<string, string[]>> {
  const reservations: Record<string, string[]> = {};
  for (const owner of owners) {
    const state = await unlessGone(() => client.workflow.getHandle(owner).query(leaseStateQuery), undefined);
    const { stickyKey, staticAddresses } = state?.start ?? {};
    if (stickyKey && staticAddresses) reservations[stickyKey] = askedAddresses({ staticAddresses });
  }
  return reservations;
}
