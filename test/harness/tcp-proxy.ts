// A loopback TCP proxy the test can cut and restore: Temporal "goes away" for whoever connects
// through it, and comes back on the same address.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { freePort } from '../../tools/processes';

export interface TcpProxy {
  address: string;
  /** Nothing listens any more: connections are refused. */
  cut(): Promise<void>;
  /** Still listening, but every connection is closed at once and counted in `refused`. */
  refuse(): void;
  /** Connections stay open (new ones too) and nothing passes: a peer that went silent. */
  stall(): void;
  readonly refused: number;
  /** When each refused connection came (epoch ms): how often a client tries again. */
  readonly refusedAt: readonly number[];
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function tcpProxy(target: string): Promise<TcpProxy> {
  const [host, port] = target.split(':');
  const listenPort = await freePort();
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let refusing = false;
  let stalling = false;
  const pairs = new Set<[Socket, Socket]>();
  const refusedAt: number[] = [];
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const dropAll = () => {
    for (const socket of sockets) socket.destroy();
  };
  const restore = () =>
    new Promise<void>((resolve, reject) => {
      refusing = false;
      stalling = false;
      if (server) return resolve(); // not cut
      server = createServer((client) => {
        if (refusing) {
          refusedAt.push(Date.now());
          return client.destroy();
        }
        track(client);
        if (stalling) return; // accepted, never answered
        const upstream = connect(Number(port), host);
        track(upstream);
        const pair: [Socket, Socket] = [client, upstream];
        pairs.add(pair);
        client.on('close', () => pairs.delete(pair));
        // One side gone (the server restarted, refused): the other is closed too, as a load
        // balancer does; a client left connected to nothing would wait for its handshake forever.
        upstream.on('close', () => client.destroy());
        client.on('close', () => upstream.destroy());
        client.pipe(upstream).pipe(client);
      });
      server.once('error', reject);
      server.listen(listenPort, '127.0.0.1', () => resolve());
    });
  const cut = async () => {
    const closing = server;
    server = undefined;
    dropAll();
    if (closing) await new Promise<void>((resolve) => closing.close(() => resolve()));
  };
  const refuse = () => {
    refusing = true;
    dropAll();
  };
  const stall = () => {
    stalling = true;
    for (const [client, upstream] of pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  };
  await restore();
  return {
    address: `127.0.0.1:${listenPort}`,
    cut,
    refuse,
    stall,
    get refused() {
      return refusedAt.length;
    },
    refusedAt,
    restore,
    close: cut,
  };
}
