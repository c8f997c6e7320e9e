// The CNI environment contract: CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_ARGS, CNI_PATH.
import { isInterfaceName } from '../domain/lease';
import { CniCode, CniError } from './errors';

export const COMMANDS = ['ADD', 'DEL', 'CHECK', 'VERSION', 'GC', 'STATUS'] as const;
export type Command = (typeof COMMANDS)[number];

export interface CniEnv {
  command: Command;
  containerId: string;
  netns: string;
  ifName: string;
  args: Record<string, string>;
}

/** Which variables each command needs (spec 1.1.0, "Parameters"). */
const REQUIRED: Record<Command, Array<'CNI_CONTAINERID' | 'CNI_NETNS' | 'CNI_IFNAME'>> = {
  ADD: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME'],
  DEL: ['CNI_CONTAINERID', 'CNI_IFNAME'],
  CHECK: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME'],
  VERSION: [],
  GC: [],
  STATUS: [],
};

/** `K=V;K2=V2`; malformed pairs are an invalid variable (code 4). */
export function parseCniArgs(text: string): Record<string, string> {
  const args: Record<string, string> = {};
  for (const pair of text.split(';').filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new CniError(CniCode.invalidEnv, `invalid CNI_ARGS: "${pair}" is not KEY=VALUE`);
    args[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return args;
}

export function readEnv(env: NodeJS.ProcessEnv): CniEnv {
  const command = env.CNI_COMMAND;
  if (!command) throw new CniError(CniCode.invalidEnv, 'missing environment variable CNI_COMMAND');
  if (!(COMMANDS as readonly string[]).includes(command)) {
    throw new CniError(
      CniCode.invalidEnv,
      `invalid CNI_COMMAND "${command}"`,
      `expected one of ${COMMANDS.join(', ')}`,
    );
  }
  const typed = command as Command;
  for (const name of REQUIRED[typed]) {
    if (!env[name]) throw new CniError(CniCode.invalidEnv, `missing environment variable ${name}`);
  }
  const ifName = env.CNI_IFNAME ?? '';
  if (ifName && !isInterfaceName(ifName)) {
    throw new CniError(
      CniCode.invalidEnv,
      `invalid CNI_IFNAME "${ifName}"`,
      'a Linux interface name: at most 15 characters, no "/", ":" or spaces, not "." or ".."',
    );
  }
  const netns = env.CNI_NETNS ?? '';
  if (netns && !netns.startsWith('/')) {
    throw new CniError(
      CniCode.invalidEnv,
      `invalid CNI_NETNS "${netns}"`,
      'an absolute path to the network namespace, such as /var/run/netns/<name>',
    );
  }
  return {
    command: typed,
    containerId: env.CNI_CONTAINERID ?? '',
    netns,
    ifName,
    args: parseCniArgs(env.CNI_ARGS ?? ''),
  };
}
