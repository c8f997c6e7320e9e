// Entry point: node dist/worker/node-agent.js --config <file>   (or NETLEASE_NODE_AGENT_CONFIG=<file>)
// The node name: `nodeName` in the file, else NETLEASE_NODE_NAME, else the host name.
import { NodeAgentConfigSchema, type NodeAgentConfig } from '../domain/config';
import { ClusterReader } from '../kubernetes/cluster-reader';
import { connectKube } from '../kubernetes/kube';
import { connectClient } from '../temporal/connection';
import { serveCniApi } from './cni-api';
import { configPath, loadConfigFile } from './config-file';
import { createNodeAgent } from './node-agent-worker';
import { startPreProducing, type PreProducer } from './pre-produce';

async function main(): Promise<void> {
  const path = configPath(process.argv, 'NETLEASE_NODE_AGENT_CONFIG', 'node-agent');
  const config = loadConfigFile(path, NodeAgentConfigSchema);
  // A DaemonSet passes spec.nodeName through the downward API; it wins over the host name.
  const nodeName = config.nodeName ?? process.env.NETLEASE_NODE_NAME;
  const agent = await createNodeAgent(nodeName ? { ...config, nodeName } : config);
  const host = config.hostNetns ? `network namespace ${config.hostNetns}` : 'its own network namespace';
  console.log(
    `netlease node agent: node ${agent.nodeName}, task queue ${agent.taskQueue}, host side in ${host}`,
  );
  const running = agent.worker.run(); // Temporal's own SIGINT/SIGTERM handling ends it
  const cni = await serveCniApi({ socket: config.cniSocket, deleteQueue: config.deleteQueue });
  console.log(`netlease node agent: CNI API on ${config.cniSocket}; queued DELs in ${config.deleteQueue}`);
  const preProducer = await preProduceFor(config, agent.nodeName);
  await running;
  preProducer?.stop();
  await cni.close();
  await agent.close();
  console.log('netlease node agent: stopped');
}

/** With a `preProduce` section: leases of pods bound to this node are produced before their ADD. */
async function preProduceFor(config: NodeAgentConfig, nodeName: string): Promise<PreProducer | undefined> {
  if (!config.preProduce || !config.kubernetes) return undefined;
  const kube = await connectKube(config.kubernetes.kubeconfig);
  const producer = startPreProducing({
    client: await connectClient(config.temporal),
    kube,
    reader: new ClusterReader(kube.core),
    nodeName,
    taskQueue: config.temporal.taskQueue,
    settings: config.preProduce,
  });
  console.log(
    `netlease node agent: pre-producing ${config.preProduce.network} leases of pods on ${nodeName}`,
  );
  return producer;
}

main().catch((err: unknown) => {
  console.error(`netlease node agent: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
