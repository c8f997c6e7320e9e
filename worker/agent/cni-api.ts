// The node agent's CNI API: HTTP/1.1 on a unix socket, one POST /cni per call from the static shim
// ({env, stdin} → {exitCode, stdout}), served with the agent's long-lived Temporal clients. DELs
// that cannot reach Temporal are queued and applied later, like those the shim queued while the
// agent was down; the queue is drained at start and then every few seconds.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { chmod, mkdir, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { decodeCall, handleCniCall, wireAnswer, type CniAnswer, type DecodedCall } from '../../cni/handle';
import { CniCode, type CniError } from '../../cni/errors';
import { eventReason } from '../../cni/refusals';
import type { EventRecorder } from '../../kubernetes/events';
import type { CniContext } from '../../cni/commands';
import { clientFor, closeTemporalClients } from './temporal-clients';
import { leasePodUid, leaseWorkflowId } from '../../domain/ids';
import { hostNodeLabel } from '../../kubernetes/node-name';
import {
  cniDuration,
  cniRefusals,
  cniRequests,
  deleteQueueLength,
  deletesQueued,
  queuedDeletesApplied,
  queuedDeletesDropped,
  verbLabel,
} from '../../observability/agent-metrics';
import { errorMessage, shortMessage, silentLog, type Log } from '../../observability/log';
import { drainDeletes, enqueueDelete, QueuedCallSchema, type Applied, type QueuedCall } from './delete-queue';

/** The shim refuses (error 5) a call whose request would be larger (cni/shim/main.go maxRequest). */
const MAX_BODY_BYTES = 16 << 20;
const DRAIN_EVERY_MS = 5000;

/**
 * Where the calls find the agent's offers (none: an agent that pre-produces nothing) and the pods'
 * facts pool selection reads (none: an agent with no kubernetes section).
 */
export interface HeldOffers {
  offers?: CniContext['offers'];
  facts?: CniContext['facts'];
  /**
   * The agent reads the pods' facts (a kubernetes section) but has not opened its watches yet (it
   * is starting): an ADD then is answered 11, never decided without the pod's annotations (the
   * soak: a static pod got the next free address from an agent just restarted).
   */
  factsComing?: boolean;
}

/** What an ADD reads for pod facts while the agent starts: every read says so (error 11 at the ADD). */
const FACTS_NOT_YET: NonNullable<CniContext['facts']> = {
  forPod: () =>
    Promise.reject(new Error('the node agent is starting: its watches of the pods are not open yet')),
};

export interface CniApiOptions {
  socket: string;
  deleteQueue: string;
  log?: Log;
  /** The agent's offers of pre-produced leases (worker/agent/offers), where it pre-produces. */
  held?: HeldOffers;
  /** How often the queued DELs are applied (a test drains by hand instead). */
  drainEveryMs?: number;
  /** Where a refused ADD's Event on its pod goes (none: no kubernetes section, no Events). */
  events?: EventRecorder;
}

export interface CniApi {
  /** Applies the queued DELs now (also runs on a timer). */
  drain(): Promise<void>;
  close(): Promise<void>;
}

const tryAgainLater = (answer: CniAnswer) =>
  answer.exitCode !== 0 && answer.error.code === CniCode.tryAgainLater;

/** The CNI error of a failed answer: its code, reason and message. */
function errorOf(answer: CniAnswer): { code: number; reason?: string; error?: string } {
  if (answer.exitCode === 0) return { code: 0 };
  const { code, reason, message, details } = answer.error;
  return { code, reason, error: shortMessage([message, details].filter(Boolean).join(': ')) };
}

/** The pod CNI_ARGS names (a runtime that names none, like cnitool by default, gets no Event). */
function podOf({ env }: DecodedCall): { namespace: string; name: string; uid?: string } | undefined {
  const args = argsOf(env);
  if (!args.K8S_POD_NAMESPACE || !args.K8S_POD_NAME) return undefined;
  return { namespace: args.K8S_POD_NAMESPACE, name: args.K8S_POD_NAME, uid: args.K8S_POD_UID || undefined };
}

/** A refused ADD's Warning on its pod: the reason in UpperCamelCase, the CNI error's msg as message. */
function recordRefusal(events: EventRecorder | undefined, call: DecodedCall, error: CniError): void {
  const pod = podOf(call);
  if (!events || !pod) return;
  const object = { apiVersion: 'v1', kind: 'Pod', ...pod };
  events.record({ object, type: 'Warning', reason: eventReason(error.reason), message: error.text });
}

/** The node a call names in its network configuration, if any (ipam.nodeName when delegated). */
function nodeOf({ stdin }: DecodedCall): unknown {
  if (!stdin.ok) return undefined; // not JSON: the answer says so (error 6)
  const conf = stdin.value as { nodeName?: unknown; ipam?: { nodeName?: unknown } } | null;
  return conf?.nodeName ?? conf?.ipam?.nodeName;
}

/** CNI_ARGS as far as they are KEY=VALUE pairs. Never throws (readEnv judges them). */
const argsOf = (env: DecodedCall['env']): Record<string, string> =>
  Object.fromEntries(
    (env.CNI_ARGS ?? '')
      .split(';')
      .map((pair) => pair.split('=', 2))
      .filter((kv): kv is [string, string] => kv.length === 2),
  );

/** What a log line says about a call: verb, pod, node, lease id. Never throws. */
export function callFields(call: DecodedCall): Record<string, string> {
  const env = call.env;
  const args = argsOf(env);
  const node = nodeOf(call);
  const fields: Record<string, string> = { verb: verbLabel(env.CNI_COMMAND) };
  const uid = env.CNI_CONTAINERID ? leasePodUid(args.K8S_POD_UID, env.CNI_CONTAINERID) : args.K8S_POD_UID;
  if (args.K8S_POD_NAME) fields.pod = `${args.K8S_POD_NAMESPACE ?? ''}/${args.K8S_POD_NAME}`;
  if (args.K8S_POD_UID) fields.podUid = args.K8S_POD_UID;
  if (uid && env.CNI_IFNAME) fields.leaseId = leaseWorkflowId(uid, env.CNI_IFNAME);
  if (env.CNI_CONTAINERID) fields.containerId = env.CNI_CONTAINERID.slice(0, 64);
  fields.node = typeof node === 'string' && node ? node : hostNodeLabel();
  return fields;
}

/** A DEL that cannot reach Temporal is queued and succeeds: no deletion is ever lost. */
async function answer(
  call: QueuedCall,
  deleteQueue: string,
  log: Log,
  context: CniContext,
  events?: EventRecorder,
): Promise<CniAnswer> {
  const started = process.hrtime.bigint();
  const decoded = decodeCall(call);
  let result = await handleCniCall(decoded, context);
  let queued = false;
  if (call.env.CNI_COMMAND === 'DEL' && tryAgainLater(result)) {
    await enqueueDelete(deleteQueue, call);
    deletesQueued.inc();
    queued = true;
    result = { exitCode: 0 };
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const { code, reason, error } = errorOf(result);
  const verb = verbLabel(call.env.CNI_COMMAND);
  cniRequests.inc({ verb, code: String(code) });
  if (result.exitCode !== 0) {
    cniRefusals.inc({ verb, reason: result.error.reason });
    if (verb === 'ADD') recordRefusal(events, decoded, result.error);
  }
  cniDuration.observe({ verb, result: code === 0 ? 'success' : 'error' }, seconds);
  const fields = { ...callFields(decoded), code, durationMs: Math.round(seconds * 1000) };
  if (queued) log.warn({ ...fields, queued: true }, 'cni DEL queued: Temporal did not answer');
  else if (code !== 0) log.warn({ ...fields, reason, error }, 'cni call failed');
  // STATUS comes every few seconds from the runtime: at debug, so the log stays about pods.
  else if (verb === 'STATUS') log.debug(fields, 'cni call');
  else log.info(fields, 'cni call');
  return result;
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
  log = silentLog(),
  held = {},
  drainEveryMs = DRAIN_EVERY_MS,
  events,
}: CniApiOptions): Promise<CniApi> {
  // Read per call: a test may hand the agent its offers after the API is up.
  const context: CniContext = {
    clients: clientFor,
    get offers() {
      return held.offers;
    },
    get facts() {
      return held.factsComing ? FACTS_NOT_YET : held.facts;
    },
  };
  const server = createServer((request, response) => {
    void (async () => {
      try {
        if (request.method !== 'POST' || request.url !== '/cni') throw new Error('POST /cni only');
        const call = QueuedCallSchema.parse(JSON.parse(await readBody(request)));
        const body = JSON.stringify(wireAnswer(await answer(call, deleteQueue, log, context, events)));
        response.writeHead(200, { 'content-type': 'application/json' }).end(body);
      } catch (err) {
        log.warn({ error: errorMessage(err) }, 'cni API: bad request');
        response.writeHead(400, { 'content-type': 'text/plain' }).end(String((err as Error).message ?? err));
      }
    })();
  });
  await mkdir(dirname(socket), { recursive: true });
  await rm(socket, { force: true }); // left by an agent that died; only one agent serves a node
  await listen(server, socket);
  await chmod(socket, 0o660);

  const apply = async (call: QueuedCall): Promise<Applied> => {
    const result = await handleCniCall(decodeCall(call), context);
    return tryAgainLater(result) ? 'later' : 'done';
  };
  let draining: Promise<void> = Promise.resolve();
  const waiting = new Set<string>(); // queued DELs that answered "later": tried after the others
  // Each drain runs after the one before it, whether that one failed or not: a rejected link must
  // not stop every later drain.
  const drain = () =>
    (draining = draining
      .catch(() => undefined)
      .then(async () => {
        const drained = await drainDeletes(deleteQueue, apply, waiting);
        queuedDeletesApplied.inc(drained.applied);
        queuedDeletesDropped.inc(drained.dropped.length);
        deleteQueueLength.set(drained.kept);
        if (drained.applied || drained.dropped.length)
          log.info({ applied: drained.applied, waiting: drained.kept }, 'queued DELs applied');
        for (const name of drained.dropped) log.warn({ file: name }, 'dropped damaged queued DEL');
        for (const name of drained.swept)
          log.warn({ file: name }, 'removed a DEL left half-written: its writer died before queuing it');
        for (const { name, error } of drained.unreadable)
          log.warn({ file: name, error }, 'queued DEL cannot be read now; kept for the next drain');
        for (const { name, error } of drained.stuck)
          log.warn({ file: name, error }, 'queued DEL file cannot be removed; the queue goes on past it');
      }));
  // Not awaited: with Temporal away the first drain takes timeouts, and the socket serves meanwhile.
  void drain().catch((err: unknown) => log.warn({ error: errorMessage(err) }, 'queued DELs: drain failed'));
  const timer = setInterval(
    () =>
      void drain().catch((err: unknown) =>
        log.warn({ error: errorMessage(err) }, 'queued DELs: drain failed'),
      ),
    drainEveryMs,
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
