// The kernel interface: `ip -json ...` with argument arrays (never a shell), inside a network
// namespace through `nsenter --net=<path>` when one is named.
import { execFile } from 'node:child_process';
import { z } from 'zod';

/** A netns given as a name (`ip netns add` style) or a path (CNI_NETNS, /proc/<pid>/ns/net). */
export const netnsPath = (nameOrPath: string): string =>
  nameOrPath.includes('/') ? nameOrPath : `/var/run/netns/${nameOrPath}`;

/** Where a command runs: `undefined` is the agent's own network namespace. */
export type Netns = string | undefined;

export class IpError extends Error {
  override name = 'IpError';
  constructor(
    readonly args: string[],
    readonly stderr: string,
  ) {
    super(`ip ${args.join(' ')}: ${stderr.trim() || 'failed'}`);
  }
  /** iproute2's wording when the object asked for is not there. */
  get notFound(): boolean {
    return /does not exist|Cannot find device|No such (file|device|process)|not found/i.test(this.stderr);
  }
  get exists(): boolean {
    return /File exists/.test(this.stderr);
  }
}

function exec(file: string, args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(file, args, { timeout: 15_000, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) reject(Object.assign(err, { stderr }));
      else resolve(stdout);
    });
    // A child that exits before reading all its input (nsenter failing) breaks the pipe: its exit
    // status is the error to report, and an unhandled EPIPE would take the whole process down.
    child.stdin?.on('error', () => undefined);
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** `nsenter --net=<path> <file> <args>` or `<file> <args>`; failures become IpError. */
export async function runIn(netns: Netns, file: string, args: string[], input?: string): Promise<string> {
  const [command, argv] = netns ? ['nsenter', [`--net=${netnsPath(netns)}`, file, ...args]] : [file, args];
  try {
    return await exec(command, argv, input);
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr || (err as Error).message;
    throw new IpError(args, stderr);
  }
}

export const ip = (netns: Netns, args: string[]): Promise<string> => runIn(netns, 'ip', args);

/**
 * iproute2's JSON writer escapes `"`, `\\`, \b, \f, \n, \r and \t in strings, and prints every
 * other control character raw, which JSON refuses; the kernel takes them in interface names
 * (CNI_IFNAME "a\u0001b" makes one). Outside strings its output has none, so each is escaped.
 */
// eslint-disable-next-line no-control-regex -- the raw control characters are what it finds
const RAW_CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g;
export const parseIpJson = (out: string): unknown =>
  JSON.parse(out.replace(RAW_CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));

/** `ip -json <args>` parsed with `schema`; iproute2 prints nothing at all for some empty lists. */
export async function ipJson<T>(netns: Netns, args: string[], schema: z.ZodType<T>): Promise<T[]> {
  const out = (await ip(netns, ['-json', ...args])).trim();
  return z.array(schema).parse(out ? parseIpJson(out) : []);
}
