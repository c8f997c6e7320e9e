// A scenario: real Temporal + real kube-apiserver, a control worker with the Kubernetes section,
// and helpers to put pods through ADD and read their leases.
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { consumeLease } from '../../cni/consume';
import type { AddressGrant } from '../../domain/allocation';
import type { ActivationPolicy, PoolSpecSchema, WedgedLeases } from '../../domain/config';
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import { termsOf, type LeaseStart, type LeaseState } from '../../domain/lease';
import { unlessGone } from '../../temporal/workflow-gone';
import { leaseStateQuery } from '../../workflows/lease-messages';
import { nodeStateQuery } from '../../workflows/node-messages';
import { reconcileWorkflow } from '../../workflows/reconcile';
import type { ReconcileSummary } from '../../activities/reconcile';
import { kubeconfigPath, testCluster, type TestCluster } from './kube';
import type { CniApi, HeldOffers } from '../../worker/agent/cni-api';
import {
  connectTest,
  runControlWorker,
  serveTestCniApi,
  temporalAddress,
  testConfig,
  type RunningWorker,
  type TestTemporal,
} from './temporal';
import { waitForValue } from './wait';
import { podsListed, untilListed } from './listed';

export interface ScenarioOptions {
  watch?: boolean;
  reconcileIntervalSeconds?: number;
  reuseCooldownSeconds?: number;
  /** Pools besides the file's own (named after its task queue), e.g. a second pool an ADD names. */
  morePools?: Array<z.input<typeof PoolSpecSchema>>;
  /** The activation policy (defaults otherwise), e.g. a short budget or no Stalled timer. */
  activation?: Partial<ActivationPolicy>;
  /** The own pool's block sizes (defaults otherwise), e.g. small blocks a few allocations fill. */
  blockSize?: { ipv4: number; ipv6: number };
  /** The node (and pool) history limit, e.g. a short one that makes them continue-as-new soon. */
  nodeHistoryLimit?: number;
  /** How the control worker reaches the cluster (default: the test's), e.g. through a TCP proxy. */
  kubeconfig?: string;
  /** When the reconciler ends a lease whose workflow task keeps failing (defaults otherwise). */
  wedgedLeases?: Partial<WedgedLeases>;
  /** The pools come from NetleasePool objects (kubernetes.poolObjects), their status every second. */
  poolObjects?: boolean;
}

export class Scenario {
  worker?: RunningWorker;
  /** The node agent's CNI API for the shim (it outlives control worker restarts). */
  cni?: CniApi;
  /** What the CNI API's calls use besides Temporal (a test may give it offers). */
  readonly context: HeldOffers = {};

  constructor(
    readonly temporal: TestTemporal,
    readonly cluster: TestCluster,
    private readonly options: ScenarioOptions,
  ) {}

  static async create(prefix: string, options: ScenarioOptions = {}): Promise<Scenario> {
    const scenario = new Scenario(await connectTest(prefix), await testCluster(prefix), options);
    await scenario.startWorker();
    scenario.cni = await serveTestCniApi(scenario.temporal.taskQueue, scenario.context);
    return scenario;
  }

  get config() {
    const { blockSize, nodeHistoryLimit, poolObjects } = this.options;
    const own = { name: this.temporal.taskQueue, cidrs: ['198.18.0.0/16', 'fd00:18::/64'] };
    const pools = [{ ...own, ...(blockSize ? { blockSize } : {}) }, ...(this.options.morePools ?? [])];
    return testConfig(this.temporal.taskQueue, {
      pools: poolObjects ? [] : pools,
      reuseCooldownSeconds: this.options.reuseCooldownSeconds ?? 1,
      ...(this.options.activation ? { activation: this.options.activation } : {}),
      ...(nodeHistoryLimit ? { nodeHistoryLimit } : {}),
      kubernetes: {
        kubeconfig: this.options.kubeconfig ?? kubeconfigPath(),
        watch: this.options.watch ?? true,
        reconcileIntervalSeconds: this.options.reconcileIntervalSeconds ?? 3600,
        ...(this.options.wedgedLeases ? { wedgedLeases: this.options.wedgedLeases } : {}),
        ...(poolObjects ? { poolObjects, poolStatusIntervalSeconds: 1 } : {}),
      },
    });
  }

  async startWorker(): Promise<void> {
    this.worker = await runControlWorker(this.config);
  }

  async stopWorker(): Promise<void> {
    await this.worker?.stop();
    this.worker = undefined;
  }

  /** The ADD the shim makes, for a pod that exists in the cluster (`ifName`: a secondary network's). */
  async add(
    podName: string,
    podUid: string,
    nodeName: string,
    containerId = `ctr-${randomUUID()}`,
    ifName = 'eth0',
    pool = this.temporal.taskQueue,
  ): Promise<AddressGrant[]> {
    const start: LeaseStart = {
      podUid,
      podNamespace: this.cluster.namespace,
      podName,
      ifName,
      nodeName,
      pool,
      mode: 'ipam',
    };
    const grant = await consumeLease(this.temporal.client, this.temporal.taskQueue, start, {
      containerId,
      netns: `/var/run/netns/${containerId}`,
      ifName,
      terms: termsOf(start),
    });
    return grant.addresses;
  }

  /** Waits until visibility lists the leases of these pods (the reconciler finds leases there). */
  listed(...podUids: string[]): Promise<void> {
    return untilListed(this.temporal.client, this.temporal.taskQueue, podsListed(...podUids));
  }

  lease(podUid: string, ifName = 'eth0') {
    return this.temporal.client.workflow.getHandle(leaseWorkflowId(podUid, ifName));
  }

  async leaseState(podUid: string, ifName = 'eth0'): Promise<LeaseState> {
    const handle = this.lease(podUid, ifName);
    const description = await handle.describe();
    return description.status.name === 'RUNNING' ? handle.query(leaseStateQuery) : handle.result();
  }

  /** Waits until the lease is in `phase` (it may not exist yet: pre-produce starts it). */
  async waitForPhase(podUid: string, phase: string, timeoutMs = 60000, ifName = 'eth0'): Promise<LeaseState> {
    const read = () => unlessGone(() => this.leaseState(podUid, ifName), undefined);
    return waitForValue(
      read,
      (s): s is LeaseState => s?.phase === phase,
      timeoutMs,
      200,
      `${ifName} lease of pod ${podUid} in ${phase}`,
    );
  }

  /** The allocation table of this scenario's pool on a node. */
  async table(nodeName: string) {
    return (await this.nodeState(nodeName)).tables[this.temporal.taskQueue];
  }

  /** The pod's owners of `addresses` in its node's table: its lease, for each (a recovered lease kept them). */
  async owners(nodeName: string, addresses: string[]): Promise<Array<string | undefined>> {
    const table = await this.table(nodeName);
    return addresses.map((address) => table?.allocations[address]?.owner);
  }

  /** The pod is deleted and the reconciler's run releases its lease, as any lease. */
  async deletedAndReleased(pod: { name: string; uid: string }): Promise<LeaseState> {
    await this.cluster.deletePod(pod.name);
    await this.reconcile();
    return this.waitForPhase(pod.uid, 'Released');
  }

  /** netleasectl's connection flags for this scenario's Temporal, task queue and cluster. */
  ctlFlags(): string[] {
    return [
      '--address',
      temporalAddress(),
      '--task-queue',
      this.temporal.taskQueue,
      '--kubeconfig',
      kubeconfigPath(),
    ];
  }

  nodeState(nodeName: string) {
    return this.temporal.client.workflow.getHandle(nodeWorkflowId(nodeName)).query(nodeStateQuery);
  }

  /** One reconciler run, the same workflow the schedule starts. */
  reconcile(): Promise<ReconcileSummary> {
    return this.temporal.client.workflow.execute(reconcileWorkflow, {
      taskQueue: this.temporal.taskQueue,
      workflowId: `reconcile-now/${randomUUID()}`,
    });
  }

  async close(): Promise<void> {
    await this.cni?.close();
    await this.stopWorker();
    await this.cluster.close();
    await this.temporal.close();
  }
}
