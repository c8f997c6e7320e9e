// The shim's Temporal client: settings from the network config (connected by
// temporal/connection, as every process is), a deadline on every call, and failures translated
// into CNI error codes.
import { ApplicationFailure } from '@temporalio/common';
import { isGrpcServiceError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { TemporalConnection } from '../domain/config';
import { FailureType } from '../domain/lease';
import { connectClient, TlsFileError } from '../temporal/connection';
import { CniCode, CniError } from './errors';

/** Connects, runs `fn` under the deadline, closes. Unreachable or slow Temporal → code 11. */
export async function withTemporal<T>(
  settings: TemporalConnection,
  timeoutSeconds: number,
  fn: (client: Client) => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  let client: Client | undefined;
  try {
    // The whole budget: on a busy node, loading and connecting can take most of it.
    client = await connectClient(settings, { connectTimeoutMs: timeoutSeconds * 1000 });
    const connected = client;
    return await connected.connection.withDeadline(deadline, () => fn(connected));
  } catch (err) {
    throw toCniError(err, settings.address);
  } finally {
    await client?.connection.close().catch(() => undefined);
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
