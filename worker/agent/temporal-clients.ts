// The node agent's Temporal clients: one long-lived client per Temporal settings in this process,
// so a CNI call costs a round trip on a warm connection, not a connect. A failed connect is
// forgotten, so the next call tries again. Pre-produce and the offers use the same client.
import type { Client } from '@temporalio/client';
import type { TemporalConnection } from '../../domain/config';
import { connectClient } from '../../temporal/connection';

const clients = new Map<string, Promise<Client>>();

/** The client for these settings (the CNI calls' `ClientSource`). */
export function clientFor(settings: TemporalConnection, connectTimeoutMs: number): Promise<Client> {
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
