// One CNI call, as the node agent serves it: the CNI_* environment and stdin in, the exit code and
// stdout out (spec 1.1.0). The static shim passes every call here (VERSION it answers itself).
import * as commands from './commands';
import { readEnv, type CniEnv } from './env';
import { CniError } from './errors';
import { checkVersion, decodeJson, parseNetConf, requestedVersion } from './netconf';

export interface CniCall {
  env: Record<string, string | undefined>;
  stdin: string;
}

export interface CniAnswer {
  exitCode: number;
  stdout: string;
}

async function dispatch(
  env: CniEnv,
  stdin: string,
  context: commands.CniContext,
): Promise<Record<string, unknown> | undefined> {
  if (env.command === 'VERSION') {
    const requested = stdin.trim() ? requestedVersion(decodeJson(stdin)) : '1.1.0';
    checkVersion(requested);
    return commands.version(requested);
  }
  const conf = parseNetConf(decodeJson(stdin));
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

/** Never throws: every failure is a CNI error on stdout with exit code 1. */
export async function handleCniCall(
  { env, stdin }: CniCall,
  context: commands.CniContext,
): Promise<CniAnswer> {
  let version = '1.1.0';
  try {
    try {
      version = requestedVersion(JSON.parse(stdin));
    } catch {
      // decoded again below, where a failure becomes error 6
    }
    const output = await dispatch(readEnv(env), stdin, context);
    return { exitCode: 0, stdout: output ? `${JSON.stringify(output)}\n` : '' };
  } catch (err) {
    const error = err instanceof CniError ? err : new CniError(999, (err as Error)?.message ?? String(err));
    return { exitCode: 1, stdout: `${JSON.stringify(error.toJSON(version))}\n` };
  }
}
