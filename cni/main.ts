// The CNI plugin executable: stdin + environment in, result or error JSON out (spec 1.1.0).
import { readFileSync } from 'node:fs';
import * as commands from './commands';
import { readEnv, type CniEnv } from './env';
import { CniCode, CniError } from './errors';
import { checkVersion, decodeJson, parseNetConf, requestedVersion } from './netconf';

// The runtime logs the plugin's stderr on every call. With TLS to an IP address, grpc-js gives the
// IP as the TLS server name and Node prints a deprecation (DEP0123) there each time: keep it out.
process.noDeprecation = true;

function readStdin(): string {
  try {
    return readFileSync(0, 'utf8');
  } catch (err) {
    throw new CniError(CniCode.ioFailure, 'cannot read stdin', (err as Error).message);
  }
}

async function dispatch(env: CniEnv, stdin: string): Promise<Record<string, unknown> | undefined> {
  if (env.command === 'VERSION') {
    const requested = stdin.trim() ? requestedVersion(decodeJson(stdin)) : '1.1.0';
    checkVersion(requested);
    return commands.version(requested);
  }
  const conf = parseNetConf(decodeJson(stdin));
  switch (env.command) {
    case 'ADD':
      return commands.add(env, conf);
    case 'DEL':
      return commands.del(env, conf);
    case 'CHECK':
      return commands.check(env, conf);
    case 'STATUS':
      return commands.status(env, conf);
    case 'GC':
      return commands.gc(env, conf);
  }
}

async function main(): Promise<number> {
  let version = '1.1.0';
  try {
    const stdin = process.env.CNI_COMMAND === 'VERSION' && process.stdin.isTTY ? '' : readStdin();
    try {
      version = requestedVersion(JSON.parse(stdin));
    } catch {
      // decoded again below, where a failure becomes error 6
    }
    const env = readEnv(process.env);
    const output = await dispatch(env, stdin);
    if (output) process.stdout.write(`${JSON.stringify(output)}\n`);
    return 0;
  } catch (err) {
    const error = err instanceof CniError ? err : new CniError(999, (err as Error)?.message ?? String(err));
    process.stdout.write(`${JSON.stringify(error.toJSON(version))}\n`);
    return 1;
  }
}

void main().then((code) => process.exit(code));
