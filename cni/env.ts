// The CNI environment contract: CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_ARGS, CNI_PATH.
import { checked, checkK8sArgs, ContainerIdSchema, IfNameSchema, NetnsSchema } from './env-fields';
import { CniCode, CniError, quoted } from './errors';

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
    if (eq <= 0) throw new CniError(CniCode.invalidEnv, `invalid CNI_ARGS: ${quoted(pair)} is not KEY=VALUE`);
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
      `invalid CNI_COMMAND ${quoted(command)}`,
      `expected one of ${COMMANDS.join(', ')}`,
    );
  }
  const typed = command as Command;
  for (const name of REQUIRED[typed]) {
    if (!env[name]) throw new CniError(CniCode.invalidEnv, `missing environment variable ${name}`);
  }
  const args = parseCniArgs(env.CNI_ARGS ?? '');
  checkK8sArgs(args);
  return {
    command: typed,
    containerId: checked('CNI_CONTAINERID', env.CNI_CONTAINERID, ContainerIdSchema),
    netns: checked('CNI_NETNS', env.CNI_NETNS, NetnsSchema),
    ifName: checked('CNI_IFNAME', env.CNI_IFNAME, IfNameSchema),
    args,
  };
}
