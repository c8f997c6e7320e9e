// How every process reaches Temporal: the address, namespace and TLS/mTLS files of one
// TemporalConnection, for a worker (NativeConnection) and the clients of the process that runs it
// (a Client on that same connection), and for a process with no worker (a client's Connection).
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  Client,
  Connection,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
  type TLSConfig,
} from '@temporalio/client';
import { NativeConnection, type TLSConfig as WorkerTlsConfig } from '@temporalio/worker';
import { ConfigError, type TemporalConnection } from '../domain/config';

type TlsField = keyof NonNullable<TemporalConnection['tls']>;

/** A TLS file named in the config that cannot be read; `field` is e.g. `clientCertFile`. */
export class TlsFileError extends ConfigError {
  override name = 'TlsFileError';
  constructor(
    readonly field: TlsField,
    readonly path: string,
    readonly reason: string,
  ) {
    super(`cannot read temporal.tls.${field} "${path}": ${reason}`);
  }
}

function readTlsFile(settings: TemporalConnection, field: TlsField): Buffer | undefined {
  const path = settings.tls?.[field];
  if (!path) return undefined;
  try {
    return readFileSync(path);
  } catch (err) {
    throw new TlsFileError(field, path, (err as Error).message);
  }
}

/**
 * The SDK's TLS options; undefined (plaintext) without a `tls` section. Every file is read now,
 * so a wrong path fails at start-up naming its field, not at the first call.
 */
export function tlsConfig(settings: TemporalConnection): TLSConfig | undefined {
  if (!settings.tls) return undefined;
  const crt = readTlsFile(settings, 'clientCertFile');
  const key = readTlsFile(settings, 'clientKeyFile');
  return {
    serverNameOverride: settings.tls.serverNameOverride,
    serverRootCACertificate: readTlsFile(settings, 'serverRootCACertificateFile'),
    // The schema requires both or neither.
    ...(crt && key ? { clientCertPair: { crt, key } } : {}),
  };
}

/**
 * grpc-js waits up to two minutes between reconnection attempts (1 s × 1.6ⁿ): a few seconds of
 * Temporal outage left the soak's control worker unable to release leases for 90 s afterwards.
 * A CNI call waits seconds at most, so the channel tries again at least every 5 s (±20% jitter).
 */
const RECONNECT_BACKOFF = {
  'grpc.initial_reconnect_backoff_ms': 1000,
  'grpc.max_reconnect_backoff_ms': 5000,
};

/**
 * A client-side Connection (grpc-js), e.g. for the health service. It retries as the client does
 * by default, but a retry must never run on a closed channel: grpc-js throws from the retry's
 * timer ("Channel has been shut down"), an uncaught exception that ends the process (seen as
 * exit code 1 on SIGTERM while Temporal was unreachable). So once closing, no new retry is
 * scheduled, and the channel closes only after the retries already scheduled have run.
 */
export async function connectConnection(
  settings: TemporalConnection,
  options: { connectTimeoutMs?: number } = {},
): Promise<Connection> {
  const retries = defaultGrpcRetryOptions();
  let closing = false;
  let lastRetryAt = 0;
  const connection = await Connection.connect({
    address: settings.address,
    tls: tlsConfig(settings),
    channelArgs: RECONNECT_BACKOFF,
    ...(options.connectTimeoutMs ? { connectTimeout: options.connectTimeoutMs } : {}),
    interceptors: [
      makeGrpcRetryInterceptor({
        retryableDecider: (attempt, status) => !closing && retries.retryableDecider(attempt, status),
        delayFunction: (attempt, status) => {
          const delayMs = retries.delayFunction(attempt, status);
          lastRetryAt = Math.max(lastRetryAt, Date.now() + delayMs);
          return delayMs;
        },
      }),
    ],
  });
  const close = connection.close.bind(connection);
  connection.close = async () => {
    closing = true;
    const pendingMs = lastRetryAt - Date.now();
    if (pendingMs > 0) await sleep(pendingMs + 50); // at most the client's longest backoff (~6 s)
    await close();
  };
  return connection;
}

/** A client on its own Connection in the settings' namespace; `client.connection.close()` ends it. */
export async function connectClient(
  settings: TemporalConnection,
  options: { connectTimeoutMs?: number } = {},
): Promise<Client> {
  const connection = await connectConnection(settings, options);
  return new Client({ connection, namespace: settings.namespace });
}

/** The connection a Worker polls on (the worker gets its namespace separately). */
export async function connectWorkerConnection(settings: TemporalConnection): Promise<NativeConnection> {
  // The worker package declares its own TLSConfig; the annotation checks the two still agree.
  const tls: WorkerTlsConfig | undefined = tlsConfig(settings);
  return NativeConnection.connect({ address: settings.address, tls });
}

/**
 * Refused, reset, broken, unresolvable or unanswered: Temporal is not there (restarting, or not
 * yet up). A TLS or auth refusal, or anything the server said, is another matter.
 */
const UNREACHABLE =
  /tcp connect error|connection refused|connection reset|connection closed|broken pipe|operation was canceled|dns error|transport error|timed out|unavailable/i;

/** Whether `err` (or an error it was caused by: a ServiceError's gRPC status) says Temporal cannot be reached. */
export function isUnreachable(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) if (UNREACHABLE.test(e.message)) return true;
  return false;
}

/**
 * `step`, tried again while Temporal cannot be reached (1 s, 2 s … 10 s apart, `onUnreachable`
 * told each time); anything else is thrown at once. For a process's start-up steps: a control
 * worker started while Temporal restarts waits for it instead of exiting (the soak counted such
 * exits as crashes: its connection, then opening its pools, met a restart).
 */
export async function whenReachable<T>(
  step: () => Promise<T>,
  onUnreachable: (err: unknown, retryInMs: number) => void,
): Promise<T> {
  for (let delayMs = 1000; ; delayMs = Math.min(delayMs * 2, 10_000)) {
    try {
      return await step();
    } catch (err) {
      if (!isUnreachable(err)) throw err;
      onUnreachable(err, delayMs);
      await sleep(delayMs);
    }
  }
}

/**
 * `connectWorkerConnection` while Temporal cannot be reached: a rollout's refusal of an unsafe
 * pool change then names the field instead of coming out as a connection error. A TLS file or a
 * refused certificate is thrown at once.
 */
export const connectWorkerConnectionWhenReachable = (
  settings: TemporalConnection,
  onUnreachable: (err: unknown, retryInMs: number) => void,
): Promise<NativeConnection> => whenReachable(() => connectWorkerConnection(settings), onUnreachable);

/**
 * A client in the settings' namespace on a Worker's connection: a process with a Worker calls
 * Temporal on the one connection it polls on. Core retries its calls and reconnects on the next
 * call, so neither grpc-js's reconnect backoff nor its retry timers (connectConnection) apply.
 * Closing the connection ends both, once no Worker runs on it.
 */
export const clientOn = (connection: NativeConnection, settings: TemporalConnection): Client =>
  new Client({ connection, namespace: settings.namespace });
