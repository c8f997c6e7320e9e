// Loopback ports for the servers a process starts (the SDK's metrics exporter, tests' servers).
import { createServer } from 'node:net';

/** A loopback TCP port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function listensFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A free loopback port in [min, max), tried at random (at most 200 tries). For servers that keep a
 * port in a column too small for the kernel's ephemeral range (Temporal's cluster membership:
 * smallint, below 32768).
 */
export async function freePortIn(min: number, max: number): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = min + Math.floor(Math.random() * (max - min));
    if (await listensFree(port)) return port;
  }
  throw new Error(`no free loopback port in [${min}, ${max}) after 200 tries`);
}
