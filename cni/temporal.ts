// Temporal for CNI calls in the node agent: settings from the network config (connected by
// temporal/connection, as every process is), a deadline on every call, and failures translated
// into CNI error codes.
import { ApplicationFailure } from '@temporalio/common';
import { isGrpcServiceError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { TemporalConnection } from '../domain/config';
import { FailureType } from '../domain/lease';
import { connectClient, TlsFileError } from '../temporal/connection';
import { CniCode, CniError } from './errors';

/**
 * One long-lived client per Temporal settings in this process (the node agent): a CNI call costs
 * a round trip on a warm connection, not a connect. A failed connect is forgotten, so the next
 * call tries again.
 */
const clients = new Map<string, Promise<Client>>();

function clientFor(settings: TemporalConnection, connectTimeoutMs: number): Promise<Client> {
  const key = JSON.stringify([settings.address, settings.namespace, settings.tls ?? null]);
  let client = clients.get(key);
  if (!client) {
    client = connectClient(settings, { connectTimeoutMs });
    clients.set(key, client);
    client.catch(() => clients.delete(key));
  }
  return client;
}

/** The same client for the agent's own work (pre-produce, offers): one connection, not two. */
export const sharedClient = (settings: TemporalConnection): Promise<Client> => clientFor(settings, 30_000);

export async function closeTemporalClients(): Promise<void> {
  const open = [...clients.values()];
  clients.clear();
  for (const client of open) await (await client.catch(() => undefined))?.connection.close();
}

/**
 * Runs `fn` under the call's deadline. Unreachable or slow Temporal → code 11. `expired` fires at
 * the deadline, for what `fn` waits on besides Temporal (an offer's confirmation).
 */
export async function withTemporal<T>(
  settings: TemporalConnection,
  timeoutSeconds: number,
  fn: (client: Client, expired: AbortSignal) => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  try {
    return await withinDeadline(deadline, async (expired) => {
      const client = await clientFor(settings, timeoutSeconds * 1000);
      return client.connection.withDeadline(deadline, () => fn(client, expired));
    });
  } catch (err) {
    throw toCniError(err, settings.address);
  }
}

/**
 * The gRPC deadline bounds each attempt, but the client's retries sleep between attempts past it
 * (a 5 s deadline ended after 6 s with Temporal unreachable): the call's answer must not outlast
 * the budget the shim waits for. The abandoned work ends by itself: its gRPC calls fail past the
 * deadline, and its other waits watch `expired`.
 */
async function withinDeadline<T>(deadline: number, work: (expired: AbortSignal) => Promise<T>): Promise<T> {
  const expiry = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        expiry.abort(new Error(`no answer within the call's deadline`));
        reject(expiry.signal.reason);
      },
      Math.max(0, deadline - Date.now()),
    );
  });
  const working = work(expiry.signal);
  working.catch(() => undefined); // settled after the deadline: nobody is waiting any more
  try {
    return await Promise.race([working, expired]);
  } finally {
    clearTimeout(timer);
  }
}

const FAILURE_CODES: Record<string, number> = {
  [FailureType.invalidConfig]: CniCode.invalidNetworkConfig,
  [FailureType.nodeUnknown]: CniCode.invalidNetworkConfig,
  [FailureType.unsupported]: CniCode.unsupportedField,
  [FailureType.exhausted]: CniCode.poolExhausted,
  [FailureType.conflict]: CniCode.addressConflict,
  [FailureType.released]: CniCode.tryAgainLater,
  [FailureType.activationFailed]: CniCode.tryAgainLater,
};

export function toCniError(err: unknown, address: string): CniError {
  if (err instanceof CniError) return err;
  if (err instanceof TlsFileError) {
    return new CniError(CniCode.ioFailure, `cannot read temporal.tls.${err.field} "${err.path}"`, err.reason);
  }
  if (err instanceof WorkflowUpdateFailedError) {
    const cause = err.cause;
    if (cause instanceof ApplicationFailure && cause.type && FAILURE_CODES[cause.type] !== undefined) {
      return new CniError(FAILURE_CODES[cause.type] as number, cause.message, `lease failure ${cause.type}`);
    }
    // Rejected by a validator: the request itself is wrong.
    return new CniError(CniCode.invalidNetworkConfig, cause?.message ?? err.message);
  }
  const message = err instanceof Error ? err.message : String(err);
  // Temporal refused the request itself (an id or a payload over its limits): asking again
  // cannot help, so it is never "try again later".
  if (isInvalidArgument(err)) {
    return new CniError(CniCode.invalidNetworkConfig, `Temporal refused the request: ${message}`);
  }
  return new CniError(CniCode.tryAgainLater, `Temporal at ${address} did not answer in time: ${message}`);
}

const GRPC_INVALID_ARGUMENT = 3;

function isInvalidArgument(err: unknown): boolean {
  const grpc = [err, (err as { cause?: unknown } | undefined)?.cause].find(isGrpcServiceError);
  return grpc?.code === GRPC_INVALID_ARGUMENT;
}
