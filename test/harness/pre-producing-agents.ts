// Node agent processes that pre-produce and read pod facts from the test cluster (ptp, real shim,
// their own host network namespace and files), as the pool-selection and static-address tests
// run one per node; started and stopped by PID.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../tools/processes';
import { kubeconfigPath } from './kube';
import { netconf } from './netconf';
import type { Scenario } from './scenario';
import { makeNetns } from './netns';
import { podCall, runShim, type PodRef, type ShimOutcome } from './shim';
import {
  startNodeAgentProcess,
  type AgentCniPaths,
  type AgentExtras,
  type NodeAgentProcess,
} from './node-agent';

export interface PreProducingAgent {
  process: NodeAgentProcess;
  paths: AgentCniPaths;
  offerDir: string;
  dir: string;
}

/** The agent of `node` on `taskQueue`, once it has started pre-producing. */
export async function startPreProducingAgent(
  node: string,
  taskQueue: string,
  label: string,
  preProduce: NonNullable<AgentExtras['preProduce']>,
): Promise<PreProducingAgent> {
  const host = await makeNetns(label);
  const dir = mkdtempSync(join(tmpdir(), `netlease-${label}-`));
  const paths = { cniSocket: join(dir, 'cni.sock'), deleteQueue: join(dir, 'del-queue') };
  const offerDir = join(dir, 'offers');
  const process = startNodeAgentProcess(node, host.name, {}, { taskQueue }, paths, {
    offerDir,
    kubernetes: { kubeconfig: kubeconfigPath() },
    preProduce: { mode: 'ptp', ...preProduce },
  });
  const watching = await waitFor(() => process.output().includes('"msg":"pre-producing leases"'), 30_000);
  if (!watching) throw new Error(`node agent of ${node} did not start pre-producing: ${process.output()}`);
  return { process, paths, offerDir, dir };
}

export async function stopPreProducingAgents(agents: Iterable<PreProducingAgent>): Promise<void> {
  for (const { process, dir } of agents) {
    await process.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A pod's ptp CNI call through the agent, as its node's runtime makes it: the test's network
 * config on `taskQueue`, naming `pool` (undefined: the config names none, selection decides).
 */
export function callThrough(
  agent: PreProducingAgent,
  command: 'ADD' | 'DEL',
  call: { taskQueue: string; nodeName: string; pod: PodRef; netnsPath: string; pool: string | undefined },
): Promise<ShimOutcome> {
  const conf = {
    ...netconf({ taskQueue: call.taskQueue, nodeName: call.nodeName }),
    pool: call.pool,
    mode: 'ptp',
    agentSocket: agent.paths.cniSocket,
    deleteQueue: agent.paths.deleteQueue,
  };
  return runShim({ ...podCall(command, call.pod, conf), netns: call.netnsPath });
}

/** A Node object and a pre-producing agent (guessing the test's own pool) for each name. */
export async function nodesWithAgents(
  scenario: Pick<Scenario, 'temporal' | 'cluster'>,
  names: readonly string[],
  label: string,
): Promise<Map<string, PreProducingAgent>> {
  const agents = new Map<string, PreProducingAgent>();
  const { taskQueue } = scenario.temporal;
  for (const [i, node] of names.entries()) {
    await scenario.cluster.createNode(node);
    const preProduce = { network: 'netlease-test', pool: taskQueue };
    agents.set(node, await startPreProducingAgent(node, taskQueue, `${label}-${i}`, preProduce));
  }
  return agents;
}
