// The control worker's periodic sample of what Temporal holds, for /metrics: open leases by
// LeasePhase (visibility counts: one GROUP BY query where the server supports it, else one count
// per phase) and each node workflow's allocation table (its `state` query) as addresses used,
// free and cooling per pool, node and family; with pools from the config file, each pool's use
// (netlease_pool_addresses; NetleasePools' comes with their status, worker/control/pool-objects).
// Bounded and cheap: once per interval, never per scrape.
import type { Client } from '@temporalio/client';
import type { PoolSpec } from '../../domain/config';
import { addressUsage } from '../../domain/allocation';
import { LEASE_PHASES } from '../../domain/lease';
import {
  addressesCooling,
  addressesFree,
  addressesUsed,
  compensationsInProgress,
  lastSample,
  leasesByPhase,
  leasesParked,
  leasesStalled,
  sampleDuration,
  sampleErrors,
  showPoolUse,
} from '../../observability/control-metrics';
import { errorMessage, type Log } from '../../observability/log';
import { readPoolUse } from '../../temporal/pool-use';
import { knownNodes, queryString } from '../../temporal/visibility';
import { LEASE_WORKFLOW_TYPE } from '../../workflows/lease-messages';
import { nodeStateQuery, type NodeState } from '../../workflows/node-messages';

export interface MetricsSampler {
  /** Samples now (also runs on the timer). */
  sample(): Promise<void>;
  /** Stops the timer; resolves once a sample in flight has ended (before its client closes). */
  stop(): Promise<void>;
}

const OPEN_PHASES = LEASE_PHASES.filter((phase) => phase !== 'Released');

async function countByPhase(client: Client, base: string, grouped: { works: boolean }) {
  const counts = new Map<string, number>(OPEN_PHASES.map((phase) => [phase, 0]));
  if (grouped.works) {
    try {
      const result = await client.workflow.count(`${base} GROUP BY LeasePhase`);
      for (const group of result.groups) {
        const phase = String(group.groupValues[0] ?? '');
        if (counts.has(phase)) counts.set(phase, group.count);
      }
      return counts;
    } catch {
      grouped.works = false; // Temporal groups by ExecutionStatus only: count each phase instead
    }
  }
  for (const phase of OPEN_PHASES) {
    counts.set(phase, (await client.workflow.count(`${base} AND LeasePhase = '${phase}'`)).count);
  }
  return counts;
}

interface NodeSample {
  node: string;
  state: NodeState;
}

async function nodeStates(client: Client, taskQueue: string): Promise<NodeSample[]> {
  const samples: NodeSample[] = [];
  for (const node of await knownNodes(client, taskQueue)) {
    const state = await client.workflow.getHandle(node.workflowId).query(nodeStateQuery);
    samples.push({ node: node.name || node.workflowId.replace(/^node\//, ''), state });
  }
  return samples;
}

export function startMetricsSampler(
  client: Client,
  taskQueue: string,
  intervalSeconds: number,
  log: Log,
  /** The pools whose use it samples (none: NetleasePools, whose status writes sample it). */
  pools?: () => PoolSpec[],
): MetricsSampler {
  const grouped = { works: true };
  const base = `WorkflowType = '${LEASE_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND TaskQueue = ${queryString(taskQueue)}`;
  let running: Promise<void> | undefined;
  let stopped = false;
  const once = async () => {
    const started = Date.now();
    try {
      const phases = await countByPhase(client, base, grouped);
      const nodes = await nodeStates(client, taskQueue);
      const uses = pools ? await readPoolUse(client, taskQueue, pools()) : new Map();
      // Everything read: replace the gauges in one go, so a gone node's series disappear.
      for (const [phase, count] of phases) leasesByPhase.set({ phase }, count);
      leasesParked.set(phases.get('ActivationFailed') ?? 0);
      leasesStalled.set(phases.get('Stalled') ?? 0);
      for (const gauge of [addressesUsed, addressesFree, addressesCooling, compensationsInProgress])
        gauge.reset();
      const now = Date.now();
      for (const { node, state } of nodes) {
        compensationsInProgress.set({ node }, Object.keys(state.retired).length);
        for (const [pool, table] of Object.entries(state.tables)) {
          const spec = state.pools[pool];
          if (!spec) continue;
          for (const usage of addressUsage(table, spec, now)) {
            const labels = { pool, node, family: `ipv${usage.family}` };
            addressesUsed.set(labels, usage.used);
            addressesFree.set(labels, usage.free);
            addressesCooling.set(labels, usage.cooling);
          }
        }
      }
      showPoolUse(uses);
      lastSample.set(now / 1000);
    } catch (err) {
      if (stopped) return; // cut by the process stopping (its workflows no longer answer queries)
      sampleErrors.inc();
      log.warn({ error: errorMessage(err) }, 'metrics sample failed');
    } finally {
      sampleDuration.set((Date.now() - started) / 1000);
    }
  };
  const sample = () => (running ??= once().finally(() => (running = undefined)));
  const timer = setInterval(() => void sample(), intervalSeconds * 1000);
  timer.unref();
  void sample();
  return {
    sample,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
