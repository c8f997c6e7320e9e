// Entry point: node dist/worker/agent/node-agent.js --config <file>   (or NETLEASE_NODE_AGENT_CONFIG=<file>)
// The node name: `nodeName` in the file, else NETLEASE_NODE_NAME, else the host name. Logs are
// JSON lines on stdout; with `metrics` in the config, GET /metrics on metrics.host:port.
import type { Client } from '@temporalio/client';
import { OfferBook } from './offers';
import { sharedClient } from './temporal-clients';
import { NodeAgentConfigSchema, type NodeAgentConfig, type PreProduce } from '../../domain/config';
import { DEFAULT_CONFLIST } from '../../domain/conflist';
import type { DataplaneActivities } from '../../domain/dataplane';
import { createDataplaneActivities, offerActivities } from '../../activities/dataplane';
import { ClusterReader } from '../../kubernetes/cluster-reader';
import { configuredNodeName, hostNodeName } from '../../kubernetes/node-name';
import { connectKube } from '../../kubernetes/kube';
import { agentRegistry } from '../../observability/agent-metrics';
import { createLog, errorMessage, type Log } from '../../observability/log';
import { serveMetrics, type MetricsServer } from '../../observability/metrics-server';
import { installRuntime } from '../../observability/runtime';
import { serveCniApi } from './cni-api';
import { configPath, loadConfigFile, preProduceAgreement } from '../config-file';
import { createNodeAgent } from './dataplane-worker';
import { startPreProducing, type PreProducer } from './pre-produce';

const bootLog = createLog('node-agent');

async function main(): Promise<void> {
  const path = configPath(process.argv, 'NETLEASE_NODE_AGENT_CONFIG', 'node-agent');
  const config = loadConfigFile(path, NodeAgentConfigSchema);
  const log = createLog('node-agent', config.logLevel);
  const runtime = await installRuntime(log, config.metrics !== undefined);
  // A DaemonSet passes spec.nodeName through the downward API; it wins over the host name.
  // Checked first: a bad name stops the agent before it connects or confirms any offer.
  const nodeName =
    config.nodeName ??
    configuredNodeName(process.env.NETLEASE_NODE_NAME, 'NETLEASE_NODE_NAME') ??
    hostNodeName();
  const client = config.preProduce ? await sharedClient(config.temporal) : undefined;
  // One dataplane (one forwarding keeper): the worker runs it and the offers activate with it.
  const dataplane = createDataplaneActivities({ hostNetns: config.hostNetns });
  const offers = await offersFor(config, client, dataplane.activateAttachment, log);
  const activities = { ...dataplane, ...offerActivities(offers) };
  const agent = await createNodeAgent({ ...config, nodeName }, activities);
  const nodeLog = log.child({ node: agent.nodeName });
  let metrics: MetricsServer | undefined;
  if (config.metrics) {
    metrics = await serveMetrics({ ...config.metrics, registry: agentRegistry, log: nodeLog, ...runtime });
    nodeLog.info({ host: config.metrics.host, port: metrics.port }, 'metrics on GET /metrics');
  }
  nodeLog.info({ taskQueue: agent.taskQueue, hostNetns: config.hostNetns ?? '(own)' }, 'node agent started');
  const running = agent.worker.run(); // Temporal's own SIGINT/SIGTERM handling ends it
  const cni = await serveCniApi({
    socket: config.cniSocket,
    deleteQueue: config.deleteQueue,
    log,
    held: { offers },
  });
  nodeLog.info({ cniSocket: config.cniSocket, deleteQueue: config.deleteQueue }, 'CNI API listening');
  const preProducer = client && (await preProduceFor(config, agent.nodeName, nodeLog, client, offers));
  await running;
  preProducer?.stop();
  offers?.close();
  await cni.close();
  await agent.close();
  await metrics?.close();
  nodeLog.info('node agent stopped');
}

/** Pre-produced leases are offered to this agent to answer their first ADD (domain/offer). */
async function offersFor(
  config: NodeAgentConfig,
  client: Client | undefined,
  activateAttachment: DataplaneActivities['activateAttachment'],
  log: Log,
) {
  if (!client || !config.preProduce) return undefined;
  const offers = await OfferBook.open({
    dir: config.offerDir,
    client,
    temporal: config.temporal,
    activate: activateAttachment,
    log,
  });
  log.info({ offerDir: config.offerDir }, 'offers of pre-produced leases answer their first ADD');
  return offers;
}

/** With a `preProduce` section: leases of pods bound to this node are produced before their ADD. */
async function preProduceFor(
  config: NodeAgentConfig,
  nodeName: string,
  log: Log,
  client: Client,
  offers: OfferBook | undefined,
): Promise<PreProducer | undefined> {
  if (!config.preProduce || !config.kubernetes) return undefined;
  logConflistAgreement(config.preProduce, log);
  const kube = await connectKube(config.kubernetes.kubeconfig, config.kubernetes.timeouts);
  const producer = startPreProducing({
    client,
    offers,
    kube,
    reader: new ClusterReader(kube.core, kube.timeouts),
    nodeName,
    taskQueue: config.temporal.taskQueue,
    settings: config.preProduce,
    log,
  });
  log.info({ network: config.preProduce.network, pool: config.preProduce.pool }, 'pre-producing leases');
  return producer;
}

/** Whether the node's conflist asks for what preProduce produces: a warning names both sides. */
function logConflistAgreement(preProduce: PreProduce, log: Log): void {
  const agreement = preProduceAgreement(preProduce);
  if (!agreement)
    log.info(
      `preProduce: no conflist to compare with (${DEFAULT_CONFLIST} is absent; set preProduce.conflist)`,
    );
  else if (agreement.mismatch) log.warn({ conflist: agreement.conflist }, agreement.mismatch);
  else log.info({ conflist: agreement.conflist }, 'preProduce matches the conflist');
}

main().catch((err: unknown) => {
  bootLog.error({ error: errorMessage(err) }, 'node agent failed');
  process.exit(1);
});
