// One CNI call, as the node agent serves it: the CNI_* environment and stdin in, the exit code and
// the result or error out (spec 1.1.0). The static shim passes every call here (VERSION it answers
// itself). The stdin is decoded once per call; the answer is structured, and `wireAnswer` is the
// one place it becomes the shim's {exitCode, stdout}.
import * as commands from './commands';
import { readEnv, type CniEnv } from './env';
import { CniError } from './errors';
import { checkVersion, decodeJson, parseNetConf, requestedVersion } from './netconf';
import { INTERNAL_ERROR_CODE } from './refusals';

/** A call as the shim sends it. */
export interface CniCall {
  env: Record<string, string | undefined>;
  stdin: string;
}

/** The stdin decoded: its JSON value, or the decode failure (error 6) a call that needs it answers. */
export type DecodedStdin =
  { ok: true; value: unknown; empty: boolean } | { ok: false; error: CniError; empty: boolean };

/** A call with its stdin decoded, once. */
export interface DecodedCall {
  env: Record<string, string | undefined>;
  stdin: DecodedStdin;
}

export function decodeCall({ env, stdin }: CniCall): DecodedCall {
  const empty = !stdin.trim();
  try {
    return { env, stdin: { ok: true, value: decodeJson(stdin), empty } };
  } catch (err) {
    if (!(err instanceof CniError)) throw err;
    return { env, stdin: { ok: false, error: err, empty } };
  }
}

/** What the call came to: success with its result (none for DEL, GC, ...), or a CNI error. */
export type CniAnswer =
  { exitCode: 0; result?: Record<string, unknown> } | { exitCode: 1; error: CniError; cniVersion: string };

/** The answer as the shim takes it: the exit code, and stdout (one JSON line, or nothing). */
export function wireAnswer(answer: CniAnswer): { exitCode: number; stdout: string } {
  const printed = answer.exitCode === 0 ? answer.result : answer.error.toJSON(answer.cniVersion);
  return { exitCode: answer.exitCode, stdout: printed ? `${JSON.stringify(printed)}\n` : '' };
}

/** The decoded stdin's value; a call that cannot be decoded is answered with error 6. */
function valueOf(stdin: DecodedStdin): unknown {
  if (!stdin.ok) throw stdin.error;
  return stdin.value;
}

async function dispatch(
  env: CniEnv,
  stdin: DecodedStdin,
  context: commands.CniContext,
): Promise<Record<string, unknown> | undefined> {
  if (env.command === 'VERSION') {
    const requested = stdin.empty ? '1.1.0' : requestedVersion(valueOf(stdin));
    checkVersion(requested);
    return commands.version(requested);
  }
  const conf = parseNetConf(valueOf(stdin));
  switch (env.command) {
    case 'ADD':
      return commands.add(env, conf, context);
    case 'DEL':
      return commands.del(env, conf, context);
    case 'CHECK':
      return commands.check(env, conf, context);
    case 'STATUS':
      return commands.status(env, conf, context);
    case 'GC':
      return commands.gc(env, conf, context);
  }
}

/** Never throws: every failure is a CNI error, in the version the call asked for. */
export async function handleCniCall(
  { env, stdin }: DecodedCall,
  context: commands.CniContext,
): Promise<CniAnswer> {
  try {
    const result = await dispatch(readEnv(env), stdin, context);
    return result ? { exitCode: 0, result } : { exitCode: 0 };
  } catch (err) {
    const error =
      err instanceof CniError
        ? err
        : new CniError(INTERNAL_ERROR_CODE, (err as Error)?.message ?? String(err), '', 'internal-error');
    return { exitCode: 1, error, cniVersion: stdin.ok ? requestedVersion(stdin.value) : '1.1.0' };
  }
}
