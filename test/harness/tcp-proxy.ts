// A loopback TCP proxy the test can cut and restore: Temporal "goes away" for whoever connects
// through it, and comes back on the same address.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { freePort } from '../../tools/processes';

export interface TcpProxy {
  address: string;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function tcpProxy(target: string): Promise<TcpProxy> {
  const [host, port] = target.split(':');
  const listenPort = await freePort();
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const restore = () =>
    new Promise<void>((resolve, reject) => {
      if (server) return resolve(); // not cut
      server = createServer((client) => {
        const upstream = connect(Number(port), host);
        track(client);
        track(upstream);
        client.pipe(upstream).pipe(client);
      });
      server.once('error', reject);
      server.listen(listenPort, '127.0.0.1', () => resolve());
    });
  const cut = async () => {
    const closing = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    if (closing) await new Promise<void>((resolve) => closing.close(() => resolve()));
  };
  await restore();
  return { address: `127.0.0.1:${listenPort}`, cut, restore, close: cut };
}
