// Temporal for CNI calls: settings from the network config, a client from the caller (the node
// agent's, worker/agent/temporal-clients), a deadline on every call, and failures translated into
// CNI error codes.
import { ApplicationFailure, NamespaceNotFoundError } from '@temporalio/common';
import { isGrpcServiceError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { TemporalConnection } from '../domain/config';
import { TlsFileError } from '../temporal/connection';
import { CniCode, CniError, quoted } from './errors';
import { failureRefusal } from './refusals';

/** Where a CNI call gets its Temporal client: the node agent's long-lived ones. */
export type ClientSource = (settings: TemporalConnection, connectTimeoutMs: number) => Promise<Client>;

/**
 * Runs `fn` under the call's deadline. Unreachable or slow Temporal → code 11. `expired` fires at
 * the deadline, for what `fn` waits on besides Temporal (an offer's confirmation).
 */
export async function withTemporal<T>(
  clientFor: ClientSource,
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

export function toCniError(err: unknown, address: string): CniError {
  if (err instanceof CniError) return err;
  // The server has no such namespace: asking again cannot help.
  if (err instanceof NamespaceNotFoundError) {
    return new CniError(
      CniCode.invalidNetworkConfig,
      `temporal.namespace: unknown namespace ${quoted(err.namespace)}`,
      `Temporal at ${address} has no such namespace`,
      'unknown-temporal-namespace',
    );
  }
  if (err instanceof TlsFileError) {
    const what = `cannot read temporal.tls.${err.field} "${err.path}"`;
    return new CniError(CniCode.ioFailure, what, err.reason, 'tls-file-unreadable');
  }
  if (err instanceof WorkflowUpdateFailedError) {
    const cause = err.cause;
    const type = cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
    const refusal = failureRefusal(type);
    if (cause && refusal)
      return new CniError(refusal.code, cause.message, `lease failure ${type}`, refusal.reason);
    // Rejected by a validator: the request itself is wrong.
    return new CniError(CniCode.invalidNetworkConfig, cause?.message ?? err.message, '', 'request-rejected');
  }
  const message = err instanceof Error ? err.message : String(err);
  // Temporal refused the request itself (an id or a payload over its limits): asking again
  // cannot help, so it is never "try again later".
  if (isInvalidArgument(err)) {
    return new CniError(
      CniCode.invalidNetworkConfig,
      `Temporal refused the request: ${message}`,
      '',
      'request-rejected',
    );
  }
  const late = `Temporal at ${address} did not answer in time: ${message}`;
  return new CniError(CniCode.tryAgainLater, late, '', 'temporal-unreachable');
}

const GRPC_INVALID_ARGUMENT = 3;

function isInvalidArgument(err: unknown): boolean {
  const grpc = [err, (err as { cause?: unknown } | undefined)?.cause].find(isGrpcServiceError);
  return grpc?.code === GRPC_INVALID_ARGUMENT;
}
