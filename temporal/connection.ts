// How every process reaches Temporal: the address, namespace and TLS/mTLS files of one
// TemporalConnection, for a client (Connection) and for a worker (NativeConnection).
import { readFileSync } from 'node:fs';
import { Client, Connection, type TLSConfig } from '@temporalio/client';
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

/** A client-side Connection (grpc-js), e.g. for the health service. */
export async function connectConnection(
  settings: TemporalConnection,
  options: { connectTimeoutMs?: number } = {},
): Promise<Connection> {
  return Connection.connect({
    address: settings.address,
    tls: tlsConfig(settings),
    ...(options.connectTimeoutMs ? { connectTimeout: options.connectTimeoutMs } : {}),
  });
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
