// CNI verbs: ADD joins (or starts) the lease workflow, DEL deactivates one attachment, CHECK
// compares the lease with what the runtime holds, VERSION and STATUS report on the plugin.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { delUpdateId, leaseWorkflowId } from '../domain/ids';
import { deactivateUpdate, leaseStateQuery } from '../workflows/lease';
import { consumeLease } from './consume';
import type { CniEnv } from './env';
import { CniCode, CniError } from './errors';
import { leaseStart } from './identity';
import { SUPPORTED_VERSIONS, type NetConf } from './netconf';
import { buildResult, convertResult } from './result';
import { withTemporal } from './temporal';

type Output = Record<string, unknown> | undefined;

function run<T>(conf: NetConf, fn: (client: Client) => Promise<T>): Promise<T> {
  return withTemporal(conf.settings.temporal, conf.settings.timeoutSeconds, fn);
}

export async function add(env: CniEnv, conf: NetConf): Promise<Output> {
  const start = leaseStart(env, conf);
  const request = { containerId: env.containerId, netns: env.netns, ifName: env.ifName };
  const grant = await run(conf, (client) =>
    consumeLease(client, conf.settings.temporal.taskQueue, start, request),
  );
  return convertResult(buildResult(conf.cniVersion, grant.addresses, conf.settings.routes), conf.cniVersion);
}

/** A workflow that is gone or already closed has nothing left to deactivate. */
async function isGone(client: Client, workflowId: string): Promise<boolean> {
  try {
    const description = await client.workflow.getHandle(workflowId).describe();
    return description.status.name !== 'RUNNING';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return true;
    throw err;
  }
}

export async function del(env: CniEnv, conf: NetConf): Promise<Output> {
  const start = leaseStart(env, conf);
  const workflowId = leaseWorkflowId(start.podUid, start.ifName);
  await run(conf, async (client) => {
    if (await isGone(client, workflowId)) return;
    try {
      await client.workflow.getHandle(workflowId).executeUpdate(deactivateUpdate, {
        args: [{ containerId: env.containerId, ifName: env.ifName }],
        updateId: delUpdateId(env.containerId, env.ifName),
      });
    } catch (err) {
      if (await isGone(client, workflowId)) return; // closed between the two calls
      throw err;
    }
  });
  return undefined;
}

export async function check(env: CniEnv, conf: NetConf): Promise<Output> {
  if (conf.cniVersion.startsWith('0.3.')) {
    throw new CniError(CniCode.incompatibleVersion, `CHECK is not defined for CNI ${conf.cniVersion}`);
  }
  const start = leaseStart(env, conf);
  const workflowId = leaseWorkflowId(start.podUid, start.ifName);
  const state = await run(conf, async (client) => {
    if (await isGone(client, workflowId)) return undefined;
    return client.workflow.getHandle(workflowId).query(leaseStateQuery);
  });
  const attachment = state?.attachments.find(
    (a) => a.containerId === env.containerId && a.ifName === env.ifName,
  );
  if (!state || !attachment) {
    throw new CniError(CniCode.containerUnknown, `no lease holds container ${env.containerId} ${env.ifName}`);
  }
  if (attachment.status !== 'active') {
    throw new CniError(CniCode.checkMismatch, `attachment is ${attachment.status} (lease ${state.phase})`);
  }
  const held = new Set(state.addresses.map((a) => `${a.address}/${a.prefixLength}`));
  const expected = prevResultAddresses(conf.prevResult);
  const missing = expected.filter((address) => !held.has(address));
  if (missing.length) {
    throw new CniError(
      CniCode.checkMismatch,
      `prevResult has ${missing.join(', ')}, the lease holds ${[...held].join(', ')}`,
    );
  }
  return undefined;
}

function prevResultAddresses(prevResult: unknown): string[] {
  const ips = (prevResult as { ips?: Array<{ address?: unknown }> } | undefined)?.ips ?? [];
  return ips.map((ip) => ip.address).filter((a): a is string => typeof a === 'string');
}

export function version(requested: string): Output {
  return { cniVersion: requested, supportedVersions: [...SUPPORTED_VERSIONS] };
}

export async function status(_env: CniEnv, conf: NetConf): Promise<Output> {
  try {
    await run(conf, (client) => client.workflowService.getSystemInfo({}));
  } catch (err) {
    const cause = err instanceof Error ? err.message : String(err);
    throw new CniError(
      CniCode.pluginNotAvailable,
      'netlease is not available: Temporal does not answer',
      cause,
    );
  }
  return undefined;
}
