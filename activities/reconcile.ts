// The reconciler's work, all inside one activity so large lists never enter workflow history:
// known set first, then quorum lists, then signals for what was missed (seeds 001 and 004).
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ControlDeps } from './deps';
import { WedgedLeasesSchema } from '../domain/config';
import { knownLeases, knownNodes, type KnownLease, type KnownNode } from '../temporal/visibility';
import { decideNode, decidePod, type PodDecision } from '../domain/cluster-decisions';
import { madeByHand } from '../domain/ids';
import type { PodFact } from '../domain/k8s';
import type { ClusterReader } from '../kubernetes/cluster-reader';
import { reopenClosedPools } from '../temporal/pools';
import { applyNodeDecision, applyPodDecision } from '../temporal/signals';
import { collectLeak, findLeaks, podLives, recoverLease } from './leaks';
import { sweepReservations } from './reservation-sweep';
import { endWedgedLeases, endWedgedNodes } from './wedged-leases';
import {
  reconcileActions,
  reconcileLastReleased,
  reconcileLastSuccess,
  reconcileRuns,
} from '../observability/control-metrics';

export interface ReconcileSummary {
  leases: number;
  pods: number;
  nodes: number;
  released: number;
  confirmedRunning: number;
  nodesDeleted: number;
  nodesReplaced: number;
  /** Pods a quorum list lacked that a second read after the grace found after all (kept). */
  secondLookAlive?: number;
  /** Leases whose workflow closed without a release: addresses collected, or the lease started again. */
  leaksCollected?: number;
  leasesRecovered?: number;
  /**
   * Lease runs whose workflow task had failed `wedgedLeases.failedTaskAttempts` times, ended by
   * the sweep: each is then started again (`leasesRecovered`) or collected (`leaksCollected`).
   */
  wedgedLeasesEnded?: number;
  /** Wedged lease runs left alone: more than `wedgedLeases.maxEndedPerRun` in one sweep. */
  wedgedLeasesHeldBack?: number;
  /** Node workflow runs ended likewise (the node's next allocation starts it again, rebuilt). */
  wedgedNodesEnded?: number;
  /**
   * Open leases on interfaces the pod watcher does not read (`kubernetes.podInterfaces`): only
   * this sweep releases them once their pod is gone.
   */
  leasesUnwatched?: number;
  /** Idle sticky reservations ended because their StatefulSet is deleted. */
  reservationsEnded?: number;
  /** Set when the run could not read the cluster (the counts are then 0): why. */
  skipped?: string;
}

/** The pod again by a quorum GET of its name: the second look before a release. */
async function stillGone(reader: ClusterReader, lease: KnownLease): Promise<boolean> {
  const [namespace, name] = lease.podRef.includes('/') ? lease.podRef.split('/', 2) : ['', ''];
  if (!namespace || !name) return true; // no name to read by: the quorum list is all there is
  const pod = await reader.readPod(namespace, name);
  return pod?.uid !== lease.podUid;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function reconcileActivities({ client, config, reader, statefulSets }: ControlDeps) {
  return {
    async reconcileCluster(): Promise<ReconcileSummary> {
      try {
        const summary = await reconcile();
        reconcileRuns.inc({ result: 'ok' });
        reconcileActions.inc({ action: 'released' }, summary.released);
        reconcileActions.inc({ action: 'confirmed_running' }, summary.confirmedRunning);
        reconcileActions.inc({ action: 'node_deleted' }, summary.nodesDeleted);
        reconcileActions.inc({ action: 'node_replaced' }, summary.nodesReplaced);
        reconcileActions.inc({ action: 'wedged_lease_ended' }, summary.wedgedLeasesEnded ?? 0);
        reconcileActions.inc({ action: 'wedged_lease_held_back' }, summary.wedgedLeasesHeldBack ?? 0);
        reconcileActions.inc({ action: 'reservation_ended' }, summary.reservationsEnded ?? 0);
        reconcileActions.inc({ action: 'wedged_node_ended' }, summary.wedgedNodesEnded ?? 0);
        reconcileLastReleased.set(summary.released);
        reconcileLastSuccess.set(Date.now() / 1000);
        Context.current().log.info('reconciled', { ...summary });
        return summary;
      } catch (err) {
        reconcileRuns.inc({ result: 'error' });
        throw err;
      }
    },
  };

  async function reconcile(): Promise<ReconcileSummary> {
    if (!reader)
      throw ApplicationFailure.nonRetryable('no kubernetes section in the config', 'InvalidConfig');
    const beat = (what: string) => (count: number) => Context.current().heartbeat({ what, count });
    const taskQueue = config.temporal.taskQueue;
    // Order matters: a lease known before the pod list was taken belongs to a pod created
    // before it, so a UID absent from the list is a pod that is really gone.
    const listed = await knownLeases(client, taskQueue);
    const known = await knownNodes(client, taskQueue);
    const pods = new Map((await reader.listPods(beat('pods'))).map((p) => [p.uid, p]));
    const liveNodes = new Map(
      (await reader.listNodes(beat('nodes'))).map((n) => [n.metadata.name, n.metadata.uid]),
    );
    const summary: ReconcileSummary = {
      leases: listed.length,
      pods: pods.size,
      nodes: liveNodes.size,
      released: 0,
      confirmedRunning: 0,
      nodesDeleted: 0,
      nodesReplaced: 0,
    };
    // Before any signal: an ended run's lease is a closed one, for the leak collection below.
    const leases = await withoutWedged(summary, listed);
    const nodes = await nodesNotWedged(summary, known);
    noteUnwatched(summary, leases);
    const releaseGraceMs = (config.kubernetes?.releaseGraceSeconds ?? 5) * 1000;
    const count = async (done: 'released' | 'confirmedRunning' | 'kept') => {
      if (done === 'released') summary.released++;
      if (done === 'confirmedRunning') summary.confirmedRunning++;
    };
    // Release follows the pod: one absent from the list is released only when a second quorum
    // read after the grace still finds no pod with its UID (seen gone twice).
    const secondLook: Array<{ lease: KnownLease; decision: PodDecision }> = [];
    for (const lease of leases.filter((l) => !madeByHand(l.podUid))) {
      const pod = pods.get(lease.podUid);
      const decision = decidePod(lease, pod);
      if (decision.action === 'release' && pod === undefined) secondLook.push({ lease, decision });
      else await count(await applyPodDecision(client, lease.workflowId, decision, 'reconciler'));
      Context.current().heartbeat({ what: 'leases' });
    }
    if (secondLook.length) await pause(releaseGraceMs);
    for (const { lease, decision } of secondLook) {
      if (await stillGone(reader, lease))
        await count(await applyPodDecision(client, lease.workflowId, decision, 'reconciler'));
      else summary.secondLookAlive = (summary.secondLookAlive ?? 0) + 1;
      Context.current().heartbeat({ what: 'second look' });
    }
    // Never resurrects a node: signals go only to node workflows that exist, never start one.
    for (const node of nodes) {
      const done = await applyNodeDecision(
        client,
        node.name,
        decideNode(node.uid || undefined, liveNodes.get(node.name)),
      );
      if (done.observed) summary.nodesReplaced++;
      else if (done.deleted) summary.nodesDeleted++;
    }
    if (statefulSets) {
      const ended = await sweepReservations(client, config, statefulSets);
      if (ended) summary.reservationsEnded = ended;
    }
    await collectLeaks(
      summary,
      new Set(leases.map((l) => l.workflowId)),
      nodes.map((n) => n.name),
      pods,
    );
    // A pool workflow terminated from the UI is started again (it rebuilds its blocks).
    await reopenClosedPools(client, config);
    return summary;
  }

  /** The listed leases but those whose run the sweep ended (its workflow task failed for good). */
  async function withoutWedged(summary: ReconcileSummary, leases: KnownLease[]): Promise<KnownLease[]> {
    const settings = config.kubernetes?.wedgedLeases ?? WedgedLeasesSchema.parse({});
    const { ended, heldBack } = await endWedgedLeases(client, leases, settings);
    Context.current().heartbeat({ what: 'workflow tasks' });
    if (heldBack > 0) {
      summary.wedgedLeasesHeldBack = heldBack;
      Context.current().log.error(
        `${heldBack} leases fail their workflow task on every attempt, more than wedgedLeases.maxEndedPerRun ` +
          `(${settings.maxEndedPerRun}): a worker that cannot run their histories? None is ended; roll back, ` +
          'or raise the limit once the cause is known (netleasectl check lists them)',
      );
    }
    if (ended.length === 0) return leases;
    summary.wedgedLeasesEnded = ended.length;
    for (const run of ended)
      Context.current().log.warn(
        'lease run ended: its workflow task failed on every attempt; the lease is started again or its addresses collected',
        { ...run },
      );
    const gone = new Set(ended.map((run) => run.workflowId));
    return leases.filter((lease) => !gone.has(lease.workflowId));
  }

  /** The known nodes but those whose run the sweep ended (no query or signal reaches it now). */
  async function nodesNotWedged(summary: ReconcileSummary, nodes: KnownNode[]): Promise<KnownNode[]> {
    const settings = config.kubernetes?.wedgedLeases ?? WedgedLeasesSchema.parse({});
    const ended = await endWedgedNodes(client, nodes, settings);
    if (ended.length === 0) return nodes;
    summary.wedgedNodesEnded = ended.length;
    for (const run of ended)
      Context.current().log.warn(
        "node workflow run ended: its workflow task failed on every attempt; the node's next allocation starts it again",
        { ...run },
      );
    const gone = new Set(ended.map((run) => run.name));
    return nodes.filter((node) => !gone.has(node.name));
  }

  /** Leases the pod watcher never reads by id: counted, and named once per run in a warning. */
  function noteUnwatched(summary: ReconcileSummary, leases: KnownLease[]): void {
    const watched = config.kubernetes?.watch ? config.kubernetes.podInterfaces : undefined;
    if (!watched) return;
    const unwatched = leases.filter((l) => !madeByHand(l.podUid) && !watched.includes(l.ifName));
    if (unwatched.length === 0) return;
    summary.leasesUnwatched = unwatched.length;
    Context.current().log.warn(
      'open leases on interfaces the pod watcher does not read: only the reconciler releases them; add the interfaces to kubernetes.podInterfaces',
      { interfaces: [...new Set(unwatched.map((l) => l.ifName))], leases: unwatched.length },
    );
  }

  /** Leases closed without a release: their addresses back to the node, or the lease started again. */
  async function collectLeaks(
    summary: ReconcileSummary,
    open: Set<string>,
    nodes: string[],
    pods: Map<string, PodFact>,
  ): Promise<void> {
    const log = Context.current().log;
    for (const leak of await findLeaks(client, nodes, open)) {
      const pod = pods.get(leak.podUid);
      if (pod && podLives(leak, pods)) {
        const recovered = await recoverLease(client, config.temporal.taskQueue, leak, pod);
        if (recovered) summary.leasesRecovered = (summary.leasesRecovered ?? 0) + 1;
        log.warn(
          recovered
            ? 'lease started again: its workflow closed while its pod runs'
            : 'lease closed while its pod runs, and its state cannot be read: see netleasectl check',
          { ...leak },
        );
      } else {
        await collectLeak(client, config, leak);
        summary.leaksCollected = (summary.leaksCollected ?? 0) + 1;
        log.warn(
          'leaked addresses collected: the lease workflow closed without returning them and its pod is gone',
          { ...leak },
        );
      }
      Context.current().heartbeat({ what: 'leaks' });
    }
  }
}
