// Reaching Temporal from the console: an operator learns in seconds, not after the SDK's 10 s,
// that Temporal is not there, and which address was tried.
import { connect } from 'node:net';
import type { Client } from '@temporalio/client';
import { ConfigError, type TemporalConnection } from '../domain/config';
import { connectClient } from '../temporal/connection';
import { OperationError } from './args';

const TIMEOUT_MS = 4_000;

const TCP_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'no such host',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

/**
 * A client, or one line naming the address and what to check. A refused TCP connection fails at
 * once (gRPC would retry it until its deadline); a server that accepts but never answers fails at
 * the deadline.
 */
export async function reachTemporal(settings: TemporalConnection): Promise<Client> {
  const unreachable = (why: string) =>
    new OperationError(
      `Temporal at ${settings.address} does not answer (${why}); is it running, and is that its ` +
        'address? (--address, or temporal.address in --config / NETLEASE_CONFIG)',
    );
  const refused = await tcpFailure(settings.address);
  if (refused) throw unreachable(refused);
  try {
    return await connectClient(settings, { connectTimeoutMs: TIMEOUT_MS });
  } catch (err) {
    if (err instanceof ConfigError) throw err; // a TLS file that cannot be read: names its field
    const message = (err as Error).message;
    const deadline = `no answer within ${TIMEOUT_MS / 1000} s`;
    throw unreachable(/deadline/i.test(message) ? deadline : `${deadline}: ${message}`);
  }
}

/** Why a TCP connection to `host:port` fails (e.g. "connection refused"); undefined if it opens. */
function tcpFailure(address: string): Promise<string | undefined> {
  const match = /^\[?([^\]]+?)\]?:(\d+)$/.exec(address);
  if (!match?.[1] || !match[2]) return Promise.resolve(undefined); // the SDK says what it makes of it
  const socket = connect({ host: match[1], port: Number(match[2]), timeout: TIMEOUT_MS });
  return new Promise((resolve) => {
    const done = (why: string | undefined) => {
      socket.destroy();
      resolve(why);
    };
    socket.once('connect', () => done(undefined));
    socket.once('timeout', () => done(`no TCP connection within ${TIMEOUT_MS / 1000} s`));
    socket.once('error', (err: NodeJS.ErrnoException) => done(TCP_ERRORS[err.code ?? ''] ?? err.message));
  });
}
