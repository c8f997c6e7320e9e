// The node agent's Temporal connections: one per server (address and TLS) in this process, made
// once, on which its Worker polls and through which its CNI calls, pre-producer and offers call
// (a Client per namespace on it), so a CNI call costs a round trip on a warm connection, not a
// connect. A connect that fails, or is not made within its caller's budget, is forgotten, so the
// next call tries again.
import type { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { TemporalConnection } from '../../domain/config';
import { clientOn, connectWorkerConnection } from '../../temporal/connection';

const connections = new Map<string, Promise<NativeConnection>>();
const clients = new Map<string, Promise<Client>>();

/** Kept in `map` under `key` until it fails. */
function memo<T>(map: Map<string, Promise<T>>, key: string, make: () => Promise<T>): Promise<T> {
  let made = map.get(key);
  if (!made) {
    const making = make();
    map.set(key, making);
    making.catch(() => map.get(key) === making && map.delete(key));
    made = making;
  }
  return made;
}

/** The connection to the settings' server (its address and TLS; the namespace is the client's). */
export function connectionFor(
  settings: TemporalConnection,
  connectTimeoutMs: number,
): Promise<NativeConnection> {
  const key = JSON.stringify([settings.address, settings.tls ?? null]);
  return memo(connections, key, () => connectWithin(settings, connectTimeoutMs));
}

/** The client for these settings (the CNI calls' `ClientSource`), on `connectionFor`'s connection. */
export function clientFor(settings: TemporalConnection, connectTimeoutMs: number): Promise<Client> {
  const key = JSON.stringify([settings.address, settings.namespace, settings.tls ?? null]);
  return memo(clients, key, async () => clientOn(await connectionFor(settings, connectTimeoutMs), settings));
}

/** A connect that outlasts `ms` fails the caller; if it is made later after all, it is closed. */
async function connectWithin(settings: TemporalConnection, ms: number): Promise<NativeConnection> {
  const connecting = connectWorkerConnection(settings);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no connection to Temporal within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([connecting, late]);
  } catch (err) {
    void connecting.then((connection) => connection.close()).catch(() => undefined);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** Closes every connection; call once no Worker runs on one (a Worker holds its connection open). */
export async function closeTemporalClients(): Promise<void> {
  const open = [...connections.values()];
  connections.clear();
  clients.clear();
  for (const connection of open) await (await connection.catch(() => undefined))?.close();
}
