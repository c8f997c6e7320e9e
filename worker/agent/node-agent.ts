// Entry point: node dist/worker/agent/node-agent.js --config <file>   (or NETLEASE_NODE_AGENT_CONFIG=<file>)
// The node name: `nodeName` in the file, else NETLEASE_NODE_NAME, else the host name. Logs are
// JSON lines on stdout; with `metrics` in the config, GET /metrics on metrics.host:port. With a
// `kubernetes` section a refused ADD raises an Event on its pod (the CNI error's reason and msg).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { NamespaceNotFoundError } from '@temporalio/common';
import { OfferBook } from './offers';
import { clientFor, connectionFor } from './temporal-clients';
import {
  ConfigError,
  NodeAgentConfigSchema,
  type NodeAgentConfig,
  type PreProduce,
} from '../../domain/config';
import { DEFAULT_CONFLIST } from '../../domain/conflist';
import type { DataplaneActivities } from '../../domain/dataplane';
import { createDataplaneActivities, offerActivities } from '../../activities/dataplane';
import { ClusterReader } from '../../kubernetes/cluster-reader';
import { configuredNodeName, hostNodeName } from '../../kubernetes/node-name';
import { eventRecorder, type EventRecorder } from '../../kubernetes/events';
import { connectKube, type KubeClients } from '../../kubernetes/kube';
import { SelectionFacts } from '../../kubernetes/selection-facts';
import { agentRegistry, podEvents } from '../../observability/agent-metrics';
import { createLog, errorMessage, type Log } from '../../observability/log';
import { serveMetrics, type MetricsServer } from '../../observability/metrics-server';
import { installRuntime } from '../../observability/runtime';
import { serveCniApi, type HeldOffers } from './cni-api';
import { configPath, loadConfigFile, preProduceAgreement } from '../config-file';
import { createNodeAgent, type NodeAgent } from './dataplane-worker';
import { startPreProducing, type PreProducer } from './pre-produce';

const bootLog = createLog('node-agent');

/** The first wait before connecting again, and the longest: Temporal may be away for long. */
const CONNECT_FIRST_WAIT_MS = 500;
const CONNECT_LONGEST_WAIT_MS = 10_000;
/** The agent's own connect (its worker, pre-producer and offers); a CNI call's has the call's budget. */
const CONNECT_TIMEOUT_MS = 30_000;

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
  const nodeLog = log.child({ node: nodeName });
  const stopping = stopSignal();
  let metrics: MetricsServer | undefined;
  if (config.metrics) {
    metrics = await serveMetrics({ ...config.metrics, registry: agentRegistry, log: nodeLog, ...runtime });
    nodeLog.info({ host: config.metrics.host, port: metrics.port }, 'metrics on GET /metrics');
  }
  const kube = config.kubernetes
    ? await connectKube(config.kubernetes.kubeconfig, config.kubernetes.timeouts)
    : undefined;
  const events = kube ? podEventsFor(kube, nodeName, nodeLog) : undefined;
  // The socket serves at once, Temporal or not: ADDs get 11 naming it, DELs are queued, STATUS is 50.
  const held: HeldOffers = kube ? { factsComing: true } : {};
  const cni = await serveCniApi({
    socket: config.cniSocket,
    deleteQueue: config.deleteQueue,
    log,
    held,
    events,
  });
  nodeLog.info({ cniSocket: config.cniSocket, deleteQueue: config.deleteQueue }, 'CNI API listening');
  // One dataplane (one forwarding keeper): the worker runs it and the offers activate with it.
  const dataplane = createDataplaneActivities({ hostNetns: config.hostNetns });
  const connected = await untilConnected(
    () => connectToTemporal({ ...config, nodeName }, dataplane, log),
    config.temporal.address,
    nodeLog,
    stopping,
  );
  if (connected) await serve(config, connected, held, nodeLog, kube);
  await cni.close();
  await events?.close();
  await connected?.agent.close();
  await metrics?.close();
  nodeLog.info('node agent stopped');
}

/** What needs Temporal: the worker, the client and the offers (the grants this agent answers ADDs from). */
interface Connected {
  agent: NodeAgent;
  client: Client;
  offers: OfferBook;
}

/** Runs the worker until SIGINT/SIGTERM (Temporal's own handling ends it), pre-producing meanwhile. */
async function serve(
  config: NodeAgentConfig,
  connected: Connected,
  held: HeldOffers,
  log: Log,
  kube: KubeClients | undefined,
) {
  const { agent, client, offers } = connected;
  held.offers = offers;
  log.info({ taskQueue: agent.taskQueue, hostNetns: config.hostNetns ?? '(own)' }, 'node agent started');
  const running = agent.worker.run();
  // With a pre-producer, its watch of the node's pods feeds the facts too (one pod watch).
  const facts =
    kube &&
    selectionFactsFor(kube, agent.nodeName, log, {
      watchPods: !config.preProduce,
      poolObjects: config.kubernetes?.poolObjects ?? false,
    });
  held.facts = facts;
  held.factsComing = false;
  const preProducer =
    kube && facts && preProduceFor(config, agent.nodeName, log, { client, offers, kube, facts });
  await running;
  preProducer?.stop();
  facts?.stop();
  offers.close();
}

/** The pods' facts pool selection reads at ADD (and the pre-producer's guess): kept from watches. */
function selectionFactsFor(
  kube: KubeClients,
  nodeName: string,
  log: Log,
  options: { watchPods: boolean; poolObjects: boolean },
): SelectionFacts {
  const onNoPoolObjects = () =>
    log.warn('kubernetes.poolObjects: the API serves no NetleasePools (404); pools read from Temporal');
  const facts = new SelectionFacts(kube, nodeName).start(
    (err) => log.warn({ watch: 'pool selection', error: errorMessage(err) }, 'watch error; reopening'),
    { ...options, onNoPoolObjects },
  );
  const pools = options.poolObjects ? ', the pools from NetleasePool objects' : '';
  log.info(`pool selection reads the pods, namespaces and node from watches${pools}`);
  return facts;
}

/**
 * The connection first (it fails at once when nothing listens): the worker polls on it and the
 * pre-producer and offers call through it, as the CNI calls do (one connection per process).
 */
async function connectToTemporal(
  config: NodeAgentConfig & { nodeName: string },
  dataplane: Omit<DataplaneActivities, 'revokeOffer'>,
  log: Log,
): Promise<Connected> {
  const connection = await connectionFor(config.temporal, CONNECT_TIMEOUT_MS);
  let offers: OfferBook | undefined;
  try {
    const client = await clientFor(config.temporal, CONNECT_TIMEOUT_MS);
    offers = await offersFor(config, client, dataplane, log);
    const activities = { ...dataplane, ...offerActivities(offers) };
    return { agent: await createNodeAgent(config, activities, connection), client, offers };
  } catch (err) {
    offers?.close();
    throw err;
  }
}

/**
 * Connects until Temporal answers, waiting longer each time; undefined once the agent is told to
 * stop first. A mistake in the configuration (a TLS file, the namespace) is thrown: it needs a fix.
 */
async function untilConnected(
  connect: () => Promise<Connected>,
  address: string,
  log: Log,
  stopping: AbortSignal,
): Promise<Connected | undefined> {
  for (let waitMs = CONNECT_FIRST_WAIT_MS; !stopping.aborted;) {
    try {
      const connected = await connect();
      if (!stopping.aborted) return connected;
      await connected.agent.close();
      connected.offers.close();
      return undefined;
    } catch (err) {
      if (err instanceof ConfigError || err instanceof NamespaceNotFoundError) throw err;
      log.warn(
        { temporal: address, error: errorMessage(err), retryInMs: waitMs },
        'Temporal does not answer: ADDs get 11 and DELs are queued until it does',
      );
    }
    await sleep(waitMs, undefined, { signal: stopping }).catch(() => undefined);
    waitMs = Math.min(waitMs * 2, CONNECT_LONGEST_WAIT_MS);
  }
  return undefined;
}

/** Aborted by SIGINT or SIGTERM (the SDK stops a running worker on them by itself). */
function stopSignal(): AbortSignal {
  const stop = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort());
  return stop.signal;
}

/**
 * The grants this agent answers ADDs from (domain/offer): pre-produced leases' offers, and cold
 * ADDs' grants whose interface it makes (ptp).
 */
async function offersFor(
  config: NodeAgentConfig,
  client: Client,
  dataplane: Omit<DataplaneActivities, 'revokeOffer'>,
  log: Log,
): Promise<OfferBook> {
  const offers = await OfferBook.open({
    dir: config.offerDir,
    client,
    temporal: config.temporal,
    activate: dataplane.activateAttachment,
    deactivate: dataplane.deactivateAttachment,
    log,
  });
  log.info({ offerDir: config.offerDir }, 'the agent answers ADDs itself from the grants it holds');
  return offers;
}

/** The Events on pods of refused ADDs, written in the background (never holding an ADD up). */
function podEventsFor(kube: KubeClients, nodeName: string, log: Log): EventRecorder {
  return eventRecorder({
    kube,
    component: 'netlease-node-agent',
    host: nodeName,
    log,
    counted: (result) => podEvents.inc({ result }),
  });
}

/** With a `preProduce` section: leases of pods bound to this node are produced before their ADD. */
function preProduceFor(
  config: NodeAgentConfig,
  nodeName: string,
  log: Log,
  uses: { client: Client; offers: OfferBook; kube: KubeClients; facts: SelectionFacts },
): PreProducer | undefined {
  if (!config.preProduce) return undefined;
  logConflistAgreement(config.preProduce, log);
  const { client, offers, kube, facts } = uses;
  const producer = startPreProducing({
    client,
    offers,
    kube,
    facts,
    onPodEvent: (type, object) => facts.keepPod(type, object),
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
