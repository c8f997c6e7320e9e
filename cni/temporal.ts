// The shim's Temporal client: settings from the network config, a deadline on every call, and
// failures translated into CNI error codes.
import { readFileSync } from 'node:fs';
import { ApplicationFailure } from '@temporalio/common';
import { Client, Connection, WorkflowUpdateFailedError, type ConnectionOptions } from '@temporalio/client';
import type { TemporalConnection } from '../domain/config';
import { FailureType } from '../domain/lease';
import { CniCode, CniError } from './errors';

function readTlsFile(path: string | undefined, field: string): Buffer | undefined {
  if (!path) return undefined;
  try {
    return readFileSync(path);
  } catch (err) {
    throw new CniError(
      CniCode.ioFailure,
      `cannot read temporal.tls.${field} "${path}"`,
      (err as Error).message,
    );
  }
}

function tlsOptions(settings: TemporalConnection): ConnectionOptions['tls'] {
  const tls = settings.tls;
  if (!tls) return undefined;
  const cert = readTlsFile(tls.clientCertFile, 'clientCertFile');
  const key = readTlsFile(tls.clientKeyFile, 'clientKeyFile');
  return {
    serverNameOverride: tls.serverNameOverride,
    serverRootCACertificate: readTlsFile(tls.serverRootCACertificateFile, 'serverRootCACertificateFile'),
    ...(cert && key ? { clientCertPair: { crt: cert, key } } : {}),
  };
}

/** Connects, runs `fn` under the deadline, closes. Unreachable or slow Temporal → code 11. */
export async function withTemporal<T>(
  settings: TemporalConnection,
  timeoutSeconds: number,
  fn: (client: Client) => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({
      address: settings.address,
      tls: tlsOptions(settings),
      // The whole budget: on a busy node, loading and connecting can take most of it.
      connectTimeout: timeoutSeconds * 1000,
    });
    const client = new Client({ connection, namespace: settings.namespace });
    const active = connection;
    return await active.withDeadline(deadline, () => fn(client));
  } catch (err) {
    throw toCniError(err, settings.address);
  } finally {
    await connection?.close().catch(() => undefined);
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
  if (err instanceof WorkflowUpdateFailedError) {
    const cause = err.cause;
    if (cause instanceof ApplicationFailure && cause.type && FAILURE_CODES[cause.type] !== undefined) {
      return new CniError(FAILURE_CODES[cause.type] as number, cause.message, `lease failure ${cause.type}`);
    }
    // Rejected by a validator: the request itself is wrong.
    return new CniError(CniCode.invalidNetworkConfig, cause?.message ?? err.message);
  }
  const message = err instanceof Error ? err.message : String(err);
  return new CniError(CniCode.tryAgainLater, `Temporal at ${address} did not answer in time: ${message}`);
}
