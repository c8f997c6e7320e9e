// The node agent's CNI API: HTTP/1.1 on a unix socket, one POST /cni per call from the static shim
// ({env, stdin} → {exitCode, stdout}), served with the agent's long-lived Temporal clients. DELs
// that cannot reach Temporal are queued and applied later, like those the shim queued while the
// agent was down; the queue is drained at start and then every few seconds.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { chmod, mkdir, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { handleCniCall, type CniAnswer } from '../cni/handle';
import { closeTemporalClients } from '../cni/temporal';
import { drainDeletes, enqueueDelete, QueuedCallSchema, type Applied, type QueuedCall } from './delete-queue';

const MAX_BODY_BYTES = 16 << 20;
const DRAIN_EVERY_MS = 5000;

export interface CniApiOptions {
  socket: string;
  deleteQueue: string;
  log?: (line: string) => void;
}

export interface CniApi {
  /** Applies the queued DELs now (also runs on a timer). */
  drain(): Promise<void>;
  close(): Promise<void>;
}

const tryAgainLater = (answer: CniAnswer) => answer.exitCode !== 0 && /"code":11[,}]/.test(answer.stdout);

/** A DEL that cannot reach Temporal is queued and succeeds: no deletion is ever lost. */
async function answer(call: QueuedCall, deleteQueue: string): Promise<CniAnswer> {
  const result = await handleCniCall(call);
  if (call.env.CNI_COMMAND !== 'DEL' || !tryAgainLater(result)) return result;
  await enqueueDelete(deleteQueue, call);
  return { exitCode: 0, stdout: '' };
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new Error(`request larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function listen(server: Server, socket: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => resolve());
  });
}

export async function serveCniApi({
  socket,
  deleteQueue,
  log = console.log,
}: CniApiOptions): Promise<CniApi> {
  const server = createServer((request, response) => {
    void (async () => {
      try {
        if (request.method !== 'POST' || request.url !== '/cni') throw new Error('POST /cni only');
        const call = QueuedCallSchema.parse(JSON.parse(await readBody(request)));
        const body = JSON.stringify(await answer(call, deleteQueue));
        response.writeHead(200, { 'content-type': 'application/json' }).end(body);
      } catch (err) {
        response.writeHead(400, { 'content-type': 'text/plain' }).end(String((err as Error).message ?? err));
      }
    })();
  });
  await mkdir(dirname(socket), { recursive: true });
  await rm(socket, { force: true }); // left by an agent that died; only one agent serves a node
  await listen(server, socket);
  await chmod(socket, 0o660);

  const apply = async (call: QueuedCall): Promise<Applied> => {
    const result = await handleCniCall(call);
    return tryAgainLater(result) ? 'later' : 'done';
  };
  let draining: Promise<void> = Promise.resolve();
  const drain = () =>
    (draining = draining.then(async () => {
      const drained = await drainDeletes(deleteQueue, apply);
      if (drained.applied || drained.dropped.length)
        log(`netlease node agent: applied ${drained.applied} queued DEL(s), ${drained.kept} waiting`);
      for (const name of drained.dropped) log(`netlease node agent: dropped unreadable queued DEL ${name}`);
    }));
  await drain();
  const timer = setInterval(
    () => void drain().catch((err: unknown) => log(`queued DELs: ${String(err)}`)),
    DRAIN_EVERY_MS,
  );
  timer.unref();
  return {
    drain,
    async close() {
      clearInterval(timer);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      await draining.catch(() => undefined);
      await rm(socket, { force: true });
      await closeTemporalClients();
    },
  };
}
