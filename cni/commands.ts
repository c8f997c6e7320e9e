// CNI verbs: ADD joins (or starts) the lease workflow, DEL deactivates one attachment, CHECK
// compares the lease (and in ptp mode the real interface) with what the runtime holds, GC drops
// attachments the runtime no longer lists, VERSION and STATUS report on the plugin.
import type { Client } from '@temporalio/client';
import { attachmentDifferences } from '../kernel/attachment-check';
import { leaseWorkflowId } from '../domain/ids';
import type { Attachment, LeaseState } from '../domain/lease';
import { routesFor } from '../domain/routes';
import { consumeLease } from './consume';
import { deactivateAttachment, leaseStateOf } from './deactivate';
import type { CniEnv } from './env';
import { CniCode, CniError } from './errors';
import { collectGarbage } from './gc';
import { leaseStart, nodeNameOf, podUid } from './identity';
import { SUPPORTED_VERSIONS, validAttachments, type NetConf } from './netconf';
import { buildResult, convertResult } from './result';
import type { OfferBook } from './offers';
import { liveNodeAgents } from './status';
import { withTemporal } from './temporal';

type Output = Record<string, unknown> | undefined;

function run<T>(conf: NetConf, fn: (client: Client, expired: AbortSignal) => Promise<T>): Promise<T> {
  return withTemporal(conf.settings.temporal, conf.settings.timeoutSeconds, fn);
}

/** What a call may use besides Temporal: the node agent's offers (none outside a node agent). */
export interface CniContext {
  offers?: OfferBook;
}

export async function add(env: CniEnv, conf: NetConf, { offers }: CniContext = {}): Promise<Output> {
  const start = leaseStart(env, conf);
  const routes = conf.settings.routes;
  const request = {
    containerId: env.containerId,
    netns: env.netns,
    ifName: env.ifName,
    ...(routes ? { routes } : {}),
  };
  // A pre-produced lease's first ADD is answered from the agent's offer; it confirms it right after.
  const offered = await offers?.take(start, request, conf.settings.temporal);
  const grant = offered
    ? { addresses: offered.addresses, links: offered.answered?.links }
    : await run(conf, (client) => consumeLease(client, conf.settings.temporal.taskQueue, start, request));
  const result = buildResult(
    conf.cniVersion,
    grant.addresses,
    routesFor(grant.addresses, routes),
    grant.links,
  );
  return convertResult(result, conf.cniVersion);
}

/** The lease of this call's pod interface. Not its node: a DEL must not fail on the node's name. */
const leaseIdOf = (env: CniEnv): string => leaseWorkflowId(podUid(env), env.ifName);

export async function del(env: CniEnv, conf: NetConf, { offers }: CniContext = {}): Promise<Output> {
  const workflowId = leaseIdOf(env);
  // An ADD answered from the offer reaches the lease first; waiting for that is part of the call's
  // budget (Temporal away: the DEL is queued, not left hanging).
  await run(conf, async (client, expired) => {
    await offers?.settled(workflowId, expired);
    await deactivateAttachment(client, workflowId, env.containerId, env.ifName);
  });
  return undefined;
}

async function leaseAttachment(
  env: CniEnv,
  conf: NetConf,
  { offers }: CniContext,
): Promise<{ state: LeaseState; attachment: Attachment }> {
  const workflowId = leaseIdOf(env);
  const state = await run(conf, async (client, expired) => {
    await offers?.settled(workflowId, expired);
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

export async function check(env: CniEnv, conf: NetConf, context: CniContext = {}): Promise<Output> {
  if (conf.cniVersion.startsWith('0.3.')) {
    throw new CniError(CniCode.incompatibleVersion, `CHECK is not defined for CNI ${conf.cniVersion}`);
  }
  const { state, attachment } = await leaseAttachment(env, conf, context);
  if (attachment.status !== 'active') {
    throw new CniError(CniCode.checkMismatch, `attachment is ${attachment.status} (lease ${state.phase})`);
  }
  const held = new Set(state.addresses.map((a) => `${a.address}/${a.prefixLength}`));
  const missing = prevResultAddresses(conf.prevResult).filter((address) => !held.has(address));
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

function prevResultAddresses(prevResult: unknown): string[] {
  const ips = (prevResult as { ips?: Array<{ address?: unknown }> } | undefined)?.ips ?? [];
  return ips.map((ip) => ip.address).filter((a): a is string => typeof a === 'string');
}

export async function gc(_env: CniEnv, conf: NetConf, { offers }: CniContext = {}): Promise<Output> {
  const valid = validAttachments(conf.raw);
  await run(conf, async (client, expired) => {
    await offers?.allSettled(expired); // answered sandboxes are in their leases before any is judged
    await collectGarbage(client, conf, nodeNameOf(conf), valid);
  });
  return undefined;
}

export function version(requested: string): Output {
  return { cniVersion: requested, supportedVersions: [...SUPPORTED_VERSIONS] };
}

export async function status(_env: CniEnv, conf: NetConf): Promise<Output> {
  const { namespace } = conf.settings.temporal;
  const agents = await run(conf, async (client) => {
    await client.workflowService.getSystemInfo({});
    return conf.delegated || conf.settings.mode !== 'ptp'
      ? undefined
      : liveNodeAgents(client, namespace, nodeNameOf(conf));
  }).catch((err: unknown) => {
    const cause = err instanceof Error ? err.message : String(err);
    throw new CniError(
      CniCode.pluginNotAvailable,
      'netlease is not available: Temporal does not answer',
      cause,
    );
  });
  if (agents && agents.length === 0) {
    throw new CniError(
      CniCode.pluginNotAvailable,
      `netlease is not available: no node agent polls ${nodeNameOf(conf)}'s task queue`,
      'start the node agent (worker/node-agent) on this node',
    );
  }
  return undefined;
}
