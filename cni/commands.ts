// CNI verbs: ADD joins (or starts) the lease workflow, DEL deactivates one attachment, CHECK
// compares the lease (and in ptp mode the real interface) with what the runtime holds, GC drops
// attachments the runtime no longer lists, VERSION and STATUS report on the plugin.
import type { Client } from '@temporalio/client';
import type { TemporalConnection } from '../domain/config';
import { attachmentDifferences } from '../kernel/attachment-check';
import { leaseWorkflowId } from '../domain/ids';
import {
  termsOf,
  type Attachment,
  type InterfaceMaker,
  type LeaseGrant,
  type LeaseStart,
  type LeaseState,
  type Sandbox,
} from '../domain/lease';
import type { Offer, OfferRecord } from '../domain/offer';
import { routesFor } from '../domain/routes';
import { poolTaskQueue, unopenedPool } from '../temporal/pools';
import { DEFAULT_POOL } from '../domain/pool-selection';
import type { PodFactsSource } from '../kubernetes/selection-facts';
import { consumeLease } from './consume';
import { chosenTerms } from './pool-choice';
import { deactivateAttachment, leaseStateOf } from './deactivate';
import type { CniEnv } from './env';
import { CniCode, CniError, quoted } from './errors';
import { collectGarbage } from './gc';
import { leaseStart, nodeNameOf, podUid } from './identity';
import { prevResultAddresses, SUPPORTED_VERSIONS, validAttachments, type NetConf } from './netconf';
import { buildResult, convertResult } from './result';
import { liveNodeAgents } from './status';
import { withTemporal, type ClientSource } from './temporal';

type Output = Record<string, unknown> | undefined;

/** The node agent's offers as a CNI call uses them (worker/agent/offers keeps them). */
export interface OfferAnswers {
  /** The offer that answers this ADD, on disk as answered; undefined: ask the lease. */
  take(
    start: LeaseStart,
    sandbox: Sandbox,
    temporal: Pick<TemporalConnection, 'address' | 'namespace'>,
  ): Promise<OfferRecord | undefined>;
  /** Whether this ADD's interface is the agent's to make (the lease then grants it as an offer). */
  makes(start: LeaseStart, temporal: Pick<TemporalConnection, 'address' | 'namespace'>): boolean;
  /** A consume's grant to the agent, answered as `take` answers; undefined: ask the lease to make it. */
  answerGrant(grant: Offer & { leaseId: string }, sandbox: Sandbox): Promise<OfferRecord | undefined>;
  /** An answer from this lease's offer has reached the lease (or `until` fired). */
  settled(leaseId: string, until?: AbortSignal): Promise<void>;
  allSettled(until?: AbortSignal): Promise<void>;
}

/**
 * What a call uses: the agent's Temporal clients, its offers where it pre-produces, and the pods'
 * facts pool selection reads where it reads the cluster.
 */
export interface CniContext {
  clients: ClientSource;
  offers?: OfferAnswers;
  facts?: PodFactsSource;
}

function run<T>(
  context: CniContext,
  conf: NetConf,
  fn: (client: Client, expired: AbortSignal) => Promise<T>,
): Promise<T> {
  return withTemporal(context.clients, conf.settings.temporal, conf.settings.timeoutSeconds, fn);
}

/**
 * ADD, one path: the agent takes the grant (its offer of a pre-produced lease, or the lease's consume
 * once the addresses are produced), makes the interface in ptp mode, answers, and confirms the answer
 * to the lease right after. If it cannot make the interface, the lease makes it (its activation
 * retries and parks) and the ADD waits for that.
 */
export async function add(env: CniEnv, conf: NetConf, context: CniContext): Promise<Output> {
  const start = await run(context, conf, async (client) => {
    const pod = leaseStart(env, conf, conf.settings.pool ?? DEFAULT_POOL);
    const { taskQueue } = conf.settings.temporal;
    return { ...pod, ...(await chosenTerms(client, taskQueue, context.facts, pod, conf.settings.pool)) };
  });
  const routes = conf.settings.routes;
  const sandbox: Sandbox = {
    containerId: env.containerId,
    netns: env.netns,
    ifName: env.ifName,
    ...(routes ? { routes } : {}),
  };
  const told = await grantOf(context, conf, start, sandbox);
  const result = buildResult(conf.cniVersion, told.addresses, routesFor(told.addresses, routes), told.links);
  return convertResult(result, conf.cniVersion);
}

/** What the runtime is told: the addresses, and in ptp mode the links made. */
type Told = Pick<LeaseGrant, 'addresses' | 'links'>;

const toldBy = (answer: OfferRecord): Told => ({
  addresses: answer.addresses,
  links: answer.answered?.links,
});

/** The grant the ADD answers with: taken from an offer, or consumed and (ptp) made by the agent. */
async function grantOf(
  context: CniContext,
  conf: NetConf,
  start: LeaseStart,
  sandbox: Sandbox,
): Promise<Told> {
  const { offers } = context;
  const { temporal } = conf.settings;
  const taken = await offers?.take(start, sandbox, temporal);
  if (taken) return toldBy(taken);
  const consume = (madeBy: InterfaceMaker) =>
    run(context, conf, async (client) => {
      await refuseUnservedPool(client, start.pool, temporal.taskQueue);
      return consumeLease(client, temporal.taskQueue, start, { ...sandbox, terms: termsOf(start), madeBy });
    });
  const consumed = await consume(offers?.makes(start, temporal) ? 'agent' : 'lease');
  if (!consumed.run || !offers) return consumed;
  const grant = { leaseId: consumed.leaseId, run: consumed.run, start, addresses: consumed.addresses };
  const answered = await offers.answerGrant(grant, sandbox);
  return answered ? toldBy(answered) : consume('lease');
}

/**
 * A pool the control plane does not serve, or serves on another task queue (where no lease
 * would ever run), is a mistake in the request: no lease is started. A pool it is still opening
 * (it starts, or starts that pool again) is "try again later".
 */
async function refuseUnservedPool(client: Client, pool: string, taskQueue: string): Promise<void> {
  const served = await poolTaskQueue(client, pool);
  if (served === taskQueue) return;
  if (served === undefined && (await unopenedPool(client, pool, taskQueue)) === 'starting')
    throw new CniError(
      CniCode.tryAgainLater,
      `the control plane is starting: pool "${pool}" is not open yet`,
      `no open pool/${pool} workflow on task queue ${quoted(taskQueue)} yet; it opens when a control worker ` +
        `configured with it starts`,
      'control-plane-starting',
    );
  if (served === undefined)
    throw new CniError(
      CniCode.invalidNetworkConfig,
      `pool: unknown pool "${pool}"`,
      `no control plane on task queue ${quoted(taskQueue)} serves it: its config has no such pool (or no ` +
        `control worker has opened any pool there yet)`,
      'unknown-pool',
    );
  throw new CniError(
    CniCode.invalidNetworkConfig,
    `temporal.taskQueue: pool "${pool}" is served on task queue ${quoted(served)}, not ${quoted(taskQueue)}`,
    "the control worker's temporal.taskQueue",
    'pool-on-other-task-queue',
  );
}

/** The lease of this call's pod interface. Not its node: a DEL must not fail on the node's name. */
const leaseIdOf = (env: CniEnv): string => leaseWorkflowId(podUid(env), env.ifName);

export async function del(env: CniEnv, conf: NetConf, context: CniContext): Promise<Output> {
  const workflowId = leaseIdOf(env);
  // An ADD answered from the offer reaches the lease first; waiting for that is part of the call's
  // budget (Temporal away: the DEL is queued, not left hanging).
  await run(context, conf, async (client, expired) => {
    await context.offers?.settled(workflowId, expired);
    await deactivateAttachment(client, workflowId, env.containerId, env.ifName);
  });
  return undefined;
}

async function leaseAttachment(
  env: CniEnv,
  conf: NetConf,
  context: CniContext,
): Promise<{ state: LeaseState; attachment: Attachment }> {
  const workflowId = leaseIdOf(env);
  const state = await run(context, conf, async (client, expired) => {
    await context.offers?.settled(workflowId, expired);
    return leaseStateOf(client, workflowId);
  });
  const attachment = state?.attachments.find(
    (a) => a.containerId === env.containerId && a.ifName === env.ifName,
  );
  if (!state || !attachment) {
    throw new CniError(CniCode.containerUnknown, `no lease holds container ${env.containerId} ${env.ifName}`);
  }
  return { state, attachment };
}

export async function check(env: CniEnv, conf: NetConf, context: CniContext): Promise<Output> {
  if (conf.cniVersion.startsWith('0.3.')) {
    throw new CniError(CniCode.incompatibleVersion, `CHECK is not defined for CNI ${conf.cniVersion}`);
  }
  const expected = prevResultAddresses(conf.prevResult);
  const { state, attachment } = await leaseAttachment(env, conf, context);
  if (attachment.status !== 'active') {
    throw new CniError(CniCode.checkMismatch, `attachment is ${attachment.status} (lease ${state.phase})`);
  }
  const held = new Set(state.addresses.map((a) => `${a.address}/${a.prefixLength}`));
  const missing = expected.filter((address) => !held.has(address));
  if (missing.length) {
    throw new CniError(
      CniCode.checkMismatch,
      `prevResult has ${missing.join(', ')}, the lease holds ${[...held].join(', ')}`,
    );
  }
  if (state.start.mode === 'ptp') {
    const differences = await attachmentDifferences({
      containerId: env.containerId,
      netns: env.netns,
      ifName: env.ifName,
      addresses: state.addresses,
      routes: routesFor(state.addresses, attachment.routes),
    });
    if (differences.length) throw new CniError(CniCode.checkMismatch, differences.join('; '));
  }
  return undefined;
}

export async function gc(_env: CniEnv, conf: NetConf, context: CniContext): Promise<Output> {
  const valid = validAttachments(conf.raw);
  await run(context, conf, async (client, expired) => {
    await context.offers?.allSettled(expired); // answered sandboxes are in their leases before any is judged
    await collectGarbage(client, conf, nodeNameOf(conf), valid);
  });
  return undefined;
}

export function version(requested: string): Output {
  return { cniVersion: requested, supportedVersions: [...SUPPORTED_VERSIONS] };
}

export async function status(_env: CniEnv, conf: NetConf, context: CniContext): Promise<Output> {
  const { namespace } = conf.settings.temporal;
  const agents = await run(context, conf, async (client) => {
    await client.workflowService.getSystemInfo({});
    return conf.delegated || conf.settings.mode !== 'ptp'
      ? undefined
      : liveNodeAgents(client, namespace, nodeNameOf(conf));
  }).catch((err: unknown) => {
    // A mistake in the configuration (a TLS file that cannot be read, an unknown namespace) is
    // the caller's to fix and keeps its code; only Temporal not answering makes netlease unavailable.
    if (err instanceof CniError && err.code !== CniCode.tryAgainLater) throw err;
    const cause = err instanceof Error ? err.message : String(err);
    throw new CniError(
      CniCode.pluginNotAvailable,
      'netlease is not available: Temporal does not answer',
      cause,
      'temporal-unreachable',
    );
  });
  if (agents && agents.length === 0) {
    throw new CniError(
      CniCode.pluginNotAvailable,
      `netlease is not available: no node agent polls ${nodeNameOf(conf)}'s task queue`,
      'start the node agent (worker/agent/node-agent) on this node',
      'no-node-agent',
    );
  }
  return undefined;
}
