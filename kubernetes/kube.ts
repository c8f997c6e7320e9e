// Loads @kubernetes/client-node (an ES module) from our CommonJS build and connects it.
import { STATUS_CODES } from 'node:http';
import { Agent } from 'node:https';
import { z } from 'zod';
import type * as Kube from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { DEFAULT_KUBE_TIMEOUTS, type KubeTimeouts } from '../domain/config';

export type KubeModule = typeof Kube;
export type CoreApi = Kube.CoreV1Api;

export interface KubeClients {
  kube: KubeModule;
  config: Kube.KubeConfig;
  core: CoreApi;
  /** How long each kind of call may go unanswered (kubeCall, the watch loop). */
  timeouts: KubeTimeouts;
}

/** `kubeconfig` path, or the in-cluster service account when omitted. */
export async function connectKube(
  kubeconfig?: string,
  timeouts: KubeTimeouts = DEFAULT_KUBE_TIMEOUTS,
): Promise<KubeClients> {
  const kube = await import('@kubernetes/client-node');
  const config = new kube.KubeConfig();
  if (kubeconfig) config.loadFromFile(kubeconfig);
  else config.loadFromDefault();
  keepConnections(config);
  return { kube, config, core: config.makeApiClient(kube.CoreV1Api), timeouts };
}

/**
 * The client makes a new HTTPS agent for every request, so every quorum read (one per produce)
 * paid a TLS handshake. Requests with the same TLS identity share one keep-alive agent instead;
 * proxies and plain HTTP keep the client's own.
 */
function keepConnections(config: Kube.KubeConfig): void {
  const agents = new Map<string, Agent>();
  const shared = (agent: unknown): unknown => {
    if (!(agent instanceof Agent)) return agent;
    const { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername } = agent.options;
    const identity = JSON.stringify(
      [ca, cert, key, pfx, passphrase, rejectUnauthorized, servername].map(String),
    );
    let kept = agents.get(identity);
    if (!kept) agents.set(identity, (kept = new Agent({ ...agent.options, keepAlive: true })));
    return kept;
  };
  const authenticate = config.applySecurityAuthentication.bind(config);
  config.applySecurityAuthentication = async (context) => {
    await authenticate(context);
    context.setAgent(shared(context.getAgent()) as Agent);
  };
}

const hasCode = (err: unknown, code: number): boolean =>
  typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;

/** 404 from the API server: the object does not exist (as of a quorum read). */
export const isNotFound = (err: unknown): boolean => hasCode(err, 404);

/** 409: a write lost to another (a stale resourceVersion, or a create of what exists). */
export const isConflict = (err: unknown): boolean => hasCode(err, 409);

/**
 * The API server's refusal in one line, `kubernetes 403 Forbidden: <its message>`: the client's
 * own error text is the status code followed by the whole body and response headers. Keeps
 * `code`, so isNotFound still reads it.
 */
export class KubeApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    readonly serverMessage: string,
  ) {
    const what = reason ? `kubernetes ${code} ${reason}` : `kubernetes ${code}`;
    super(serverMessage ? `${what}: ${serverMessage}` : what);
    this.name = 'KubeApiError';
  }
}

/** The API server's Status object, as much of it as a refusal needs. */
const StatusSchema = z.object({
  message: z.string().min(1).optional(),
  reason: z.string().min(1).optional(),
});

/** The Status in an ApiException's body: an object, its JSON text, or (401) nothing at all. */
function statusOf(body: unknown): z.infer<typeof StatusSchema> {
  let decoded = body;
  if (typeof body === 'string') {
    try {
      decoded = JSON.parse(body);
    } catch {
      return { message: body.replace(/\s+/g, ' ').trim().slice(0, 300) || undefined }; // an HTML page from a proxy
    }
  }
  const parsed = StatusSchema.safeParse(decoded ?? {});
  return parsed.success ? parsed.data : {};
}

/**
 * A refusal of the API server as a KubeApiError: the client's ApiException, or the error its Watch
 * throws (the status text, with `statusCode`). Anything else (a refused connection) as it is.
 */
export function kubeApiError(err: unknown): unknown {
  if (!(err instanceof Error) || err instanceof KubeApiError) return err;
  const { code, body, statusCode } = err as { code?: unknown; body?: unknown; statusCode?: unknown };
  if (typeof statusCode === 'number') return new KubeApiError(statusCode, err.message, '');
  if (!err.message.startsWith('HTTP-Code:') || typeof code !== 'number') return err;
  return kubeRefusal(code, body);
}

/** An answer other than 200 (its status code, and its body: a Status, its JSON text, or not) as a KubeApiError. */
export function kubeRefusal(code: number, body: unknown): KubeApiError {
  const status = statusOf(body);
  const reason = status.reason ?? STATUS_CODES[code] ?? '';
  // A 401's Status says "Unauthorized" twice: one line says it once.
  return new KubeApiError(code, reason, status.message === reason ? '' : (status.message ?? ''));
}

/** A watch's ERROR event (a Status object) as a KubeApiError. */
export function kubeStatusError(status: unknown): KubeApiError {
  const { code } = z.object({ code: z.number().int() }).catch({ code: 0 }).parse(status);
  const { reason, message } = statusOf(status);
  return new KubeApiError(code, reason ?? STATUS_CODES[code] ?? '', message ?? '');
}

/** The per-call options of the client's API methods (its middleware chain). */
export type KubeCallOptions = Kube.ConfigurationOptions;

/**
 * Runs a Kubernetes call that must answer within `ms`: the client sets no timeout, and a call on a
 * connection gone silent would wait forever. `call` passes `options` to the client's method, so
 * the request is aborted (its connection closed) at the bound; the race stands in for an abort
 * the client does not honour. A refusal comes back as a KubeApiError.
 */
export async function kubeCall<T>(
  what: string,
  ms: number,
  call: (options: KubeCallOptions) => Promise<T>,
): Promise<T> {
  const { Observable } = await import('@kubernetes/client-node');
  const abort = new AbortController();
  const pass = <C>(context: C) => new Observable(Promise.resolve(context));
  const options: KubeCallOptions = {
    middleware: [{ pre: (request) => (request.setSignal(abort.signal), pass(request)), post: pass }],
    middlewareMergeStrategy: 'append',
  };
  try {
    // Late: the request ends, and with it its connection (a keep-alive one would stay stuck).
    return await within(call(options), ms, what, () => abort.abort());
  } catch (err) {
    throw kubeApiError(err);
  }
}

/**
 * `promise`'s outcome, or a rejection naming `what` once `ms` passed without one; `onLate` runs
 * then (after the rejection, so that it wins the race over what `onLate` causes).
 */
export function within<T>(promise: Promise<T>, ms: number, what: string, onLate?: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`${what}: no answer in ${ms} ms`));
      onLate?.();
    }, ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
