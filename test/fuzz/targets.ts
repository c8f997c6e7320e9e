// The two ways in: the real shim executable as a runtime execs it (environment + stdin), and the
// node agent's HTTP API on its unix socket as the shim posts to it. Each call has a deadline; one
// that passes it is a hang.
import { request } from 'node:http';
import { SHIM } from '../../tools/cni-dir';
import { runToEnd } from '../../tools/processes';
import { HOST_NETNS, POD_NETNS, type FuzzInput } from './input';

/** A call's budget: the configurations' timeoutSeconds (at most 10 here) and the shim's 5 s grace, with room. */
export const CALL_DEADLINE_MS = 25_000;

export interface Where {
  podNetns: string;
  hostNetns: string;
}

export interface CallOutcome {
  /** The shim's exit status (0, 1), or null when it was killed. */
  exitCode: number | null;
  stdout: string;
  ms: number;
  timedOut: boolean;
}

/** The environment with the namespaces put in. */
export function resolvedEnv(input: FuzzInput, where: Where): Record<string, string> {
  const netns = input.env.CNI_NETNS;
  const resolved = netns === POD_NETNS ? where.podNetns : netns === HOST_NETNS ? where.hostNetns : netns;
  return { ...input.env, ...(resolved === undefined ? {} : { CNI_NETNS: resolved }) };
}

/**
 * The variables as an environment block carries them: no NUL (it ends a C string), no name with
 * "=" or none. The shim target judges the call by these.
 */
export function execEnv(env: Record<string, string>): Record<string, string> {
  const entries = Object.entries(env)
    .filter(([name]) => name !== '' && !name.includes('=') && !name.includes('\0'))
    .map(([name, value]) => [name, value.replaceAll('\0', '')]);
  return Object.fromEntries(entries) as Record<string, string>;
}

export async function callShim(input: FuzzInput, where: Where): Promise<CallOutcome> {
  const started = performance.now();
  const finished = await runToEnd(SHIM, [], {
    env: { PATH: process.env.PATH, ...execEnv(resolvedEnv(input, where)) },
    input: input.stdinBytes ?? input.stdin,
    timeoutMs: CALL_DEADLINE_MS,
  });
  return {
    exitCode: finished.exitCode,
    stdout: finished.stdout,
    ms: performance.now() - started,
    timedOut: finished.timedOut ?? false,
  };
}

export interface ApiOutcome {
  /** The HTTP status, or undefined when no answer came (refused, reset, deadline). */
  status?: number;
  body: string;
  ms: number;
  timedOut: boolean;
  error?: string;
}

export interface ApiRequest {
  method: string;
  path: string;
  body: string | Uint8Array;
}

/** The body the shim would post for `input`: its CNI_* variables and stdin. */
export function shimBody(input: FuzzInput, where: Where): string {
  const env = Object.fromEntries(
    Object.entries(resolvedEnv(input, where)).filter(([n]) => n.startsWith('CNI_')),
  );
  const stdin = input.stdinBytes ? Buffer.from(input.stdinBytes).toString('utf8') : input.stdin;
  return JSON.stringify({ env, stdin });
}

export function callApi(socket: string, { method, path, body }: ApiRequest): Promise<ApiOutcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    const done = (outcome: Omit<ApiOutcome, 'ms'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...outcome, ms: performance.now() - started });
    };
    const req = request(
      // A connection per request, as the shim makes: a kept-alive one the agent closes when idle
      // would reset a request sent on it at that moment.
      { socketPath: socket, method, path, headers: { 'content-type': 'application/json' }, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          done({ status: res.statusCode, body: Buffer.concat(chunks).toString(), timedOut: false }),
        );
        res.on('error', (err) => done({ body: '', timedOut: false, error: err.message }));
      },
    );
    const timer = setTimeout(() => {
      done({ body: '', timedOut: true });
      req.destroy();
    }, CALL_DEADLINE_MS);
    req.on('error', (err) => done({ body: '', timedOut: false, error: err.message }));
    req.end(body);
  });
}
