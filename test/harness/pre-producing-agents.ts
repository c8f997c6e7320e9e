// Node agent processes that pre-produce and read pod facts from the test cluster (ptp, real shim,
// their own host network namespace and files), as the pool-selection and static-address tests
// run one per node; started and stopped by PID.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../tools/processes';
import { kubeconfigPath } from './kube';
import { makeNetns } from './netns';
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
