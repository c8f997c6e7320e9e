// The state a rejected call must leave as it found it: the agent's files (DEL queue, offers), the
// links and addresses of the host-side and pod namespaces, and the lease the call would have used.
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { leasePodUid, leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import { ipJson } from '../../kernel/ip';
import { LinkSchema } from '../../kernel/links';
import { hostNodeLabel } from '../../kubernetes/node-name';
import type { TestNetns } from '../harness/netns';
import type { FuzzInput } from './input';

export interface Snapshot {
  files: string[];
  host: string[];
  pod: string[];
  /** The lease the call names: its status and history length, or absent. */
  lease?: string;
}

/** Every entry of the directories (temporary files too), with size and modification time. */
export async function filesIn(dirs: string[]): Promise<string[]> {
  const lines: string[] = [];
  for (const dir of dirs) {
    const names = await readdir(dir).catch((err: NodeJS.ErrnoException) =>
      err.code === 'ENOENT' ? [] : Promise.reject(err),
    );
    for (const name of names.sort()) {
      const info = await stat(join(dir, name)).catch(() => undefined);
      lines.push(`${join(dir, name)} ${info?.size ?? 'gone'} ${info?.mtimeMs ?? ''}`);
    }
  }
  return lines;
}

/** Each link with its index, MAC and addresses, as `ip -n <netns> -json addr show` reads them (one process, no nsenter). */
export async function linksIn(netns: TestNetns): Promise<string[]> {
  const links = await ipJson(undefined, ['-n', netns.name, 'addr', 'show'], LinkSchema);
  return links.map((l) => {
    const addresses = (l.addr_info ?? []).map((a) => `${a.local}/${a.prefixlen}`).join(',');
    return `${l.ifname}#${l.ifindex} ${l.address ?? ''} ${addresses}`;
  });
}

/** The value of `key` in CNI_ARGS as the conventions read it (the last pair wins). */
function cniArg(args: string | undefined, key: string): string | undefined {
  let value: string | undefined;
  for (const pair of (args ?? '').split(';'))
    if (pair.startsWith(`${key}=`)) value = pair.slice(key.length + 1);
  return value;
}

/**
 * A value as the shim's environment holds it: spawning encodes the string as UTF-8, so a lone
 * surrogate arrives as U+FFFD (and the agent's API refuses one sent as an escape).
 */
const asPassed = (text: string | undefined): string | undefined =>
  text === undefined ? undefined : Buffer.from(text, 'utf8').toString('utf8');

/** The lease id the call would use, when it names a container (or pod) and an interface. */
export function leaseIdOf(input: FuzzInput): string | undefined {
  const [containerId, ifName, args] = ['CNI_CONTAINERID', 'CNI_IFNAME', 'CNI_ARGS'].map((name) =>
    asPassed(input.env[name]),
  );
  const uid = cniArg(args, 'K8S_POD_UID');
  if (!ifName || (!containerId && !uid)) return undefined;
  return leaseWorkflowId(leasePodUid(uid, containerId ?? ''), ifName);
}

/** Temporal's limit on a workflow id: a longer one names no workflow (and a describe of 20 KB hangs). */
const MAX_ID_BYTES = 1000;

/** An id a workflow can have: within Temporal's limit, and text (no lone surrogate). */
export const possibleWorkflowId = (id: string): boolean =>
  Buffer.byteLength(id) <= MAX_ID_BYTES && !/\p{Cs}/u.test(id);

/** `RUNNING 12` (status and history length), or `absent`. */
export async function leaseMark(client: Client, leaseId: string): Promise<string> {
  if (!possibleWorkflowId(leaseId)) return 'absent';
  try {
    const handle = client.workflow.getHandle(leaseId);
    const description = await client.connection.withDeadline(Date.now() + 10_000, () => handle.describe());
    return `${description.status.name} ${description.historyLength}`;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 'absent';
    throw err;
  }
}

/** What changed between two snapshots, one line per difference. */
export function differences(before: Snapshot, after: Snapshot): string[] {
  const lines: string[] = [];
  const compare = (what: string, a: string[], b: string[]) => {
    const gone = a.filter((x) => !b.includes(x));
    const added = b.filter((x) => !a.includes(x));
    if (gone.length) lines.push(`${what}: gone ${gone.join('; ')}`);
    if (added.length) lines.push(`${what}: new ${added.join('; ')}`);
  };
  compare('agent files', before.files, after.files);
  compare('host namespace', before.host, after.host);
  compare('pod namespace', before.pod, after.pod);
  if (before.lease !== after.lease) lines.push(`lease: was ${before.lease}, now ${after.lease}`);
  return lines;
}

export /** The lease and node a call names (the node from its configuration, else the host's name). */
function workflowsOf(call: FuzzInput): string[] {
  const ids = [leaseIdOf(call)];
  try {
    const conf = JSON.parse(call.stdin) as { nodeName?: unknown; ipam?: { nodeName?: unknown } };
    const node = conf.nodeName ?? conf.ipam?.nodeName;
    ids.push(nodeWorkflowId(typeof node === 'string' ? node : hostNodeLabel()));
  } catch {
    // not JSON: it names no node
  }
  return ids.filter((id): id is string => id !== undefined);
}
