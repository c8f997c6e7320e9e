// Entry point: node dist/worker/node-agent.js --config <file>   (or NETLEASE_NODE_AGENT_CONFIG=<file>)
// The node name: `nodeName` in the file, else NETLEASE_NODE_NAME, else the host name.
import { NodeAgentConfigSchema } from '../domain/config';
import { serveCniApi } from './cni-api';
import { configPath, loadConfigFile } from './config-file';
import { createNodeAgent } from './node-agent-worker';

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
  await running;
  await cni.close();
  await agent.close();
  console.log('netlease node agent: stopped');
}

main().catch((err: unknown) => {
  console.error(`netlease node agent: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
