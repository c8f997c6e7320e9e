// What a local cluster adds to the machine's own network namespace (tools/node-reach), recorded
// so that it is removed when the cluster stops and, after a crash, by the next cluster's start:
// an `unreachable` route per pool CIDR (nothing addressed to a pod may follow the machine's default
// route), the machine ends of the nodes' veth pairs (the routes to the pods go with them) and the
// route monitors. A record per cluster in RECORD_DIR names its owner; one whose owner no longer
// runs is a crashed run's, and what it lists is removed. /run empties at boot, as the routes do.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ip, ipJson, IpError } from '../kernel/ip';
import { deleteLink, RouteEntrySchema, type RouteEntry } from '../kernel/links';
import { isRunning, ProcessRecordSchema, stopPid, thisProcess } from './processes';

export const RECORD_DIR = '/run/netlease/machine-routes';

const MachineRecordSchema = z.object({
  owner: ProcessRecordSchema,
  /** Links made in the machine's namespace (their routes go with them). */
  links: z.array(z.string()),
  /** Pool CIDRs this run holds an `unreachable` route for (only once added: never another's). */
  unreachable: z.array(z.string()),
  /** `ip monitor` processes watching the nodes' host namespaces. */
  monitors: z.array(ProcessRecordSchema),
});
export type MachineRecord = z.infer<typeof MachineRecordSchema>;

/** The pool CIDR is routed in the machine already: another run's pool, or a network of the machine. */
export class PoolRangeTaken extends Error {
  override name = 'PoolRangeTaken';
  constructor(
    readonly cidr: string,
    routes: RouteEntry[],
  ) {
    const held = routes.map((r) => `${r.type ?? 'unicast'} ${r.dst}${r.dev ? ` dev ${r.dev}` : ''}`);
    super(
      `the pool CIDR ${cidr} is routed in this machine's namespace already` +
        `${held.length ? ` (${held.join(', ')})` : ''}: another local cluster's pool, or a network of ` +
        `the machine; a local cluster needs pool CIDRs of its own`,
    );
  }
}

const familyOf = (cidr: string): 4 | 6 => (cidr.includes(':') ? 6 : 4);

/** A record file, kept up to date as the run adds things: `save()` after each change. */
export function newRecord(name: string): { record: MachineRecord; save(): void; remove(): void } {
  mkdirSync(RECORD_DIR, { recursive: true });
  const file = join(RECORD_DIR, `${name}.json`);
  const record: MachineRecord = { owner: thisProcess(), links: [], unreachable: [], monitors: [] };
  return {
    record,
    save() {
      writeFileSync(`${file}.partial`, JSON.stringify(record)); // a reader never sees half of it
      renameSync(`${file}.partial`, file);
    },
    remove: () => rmSync(file, { force: true }),
  };
}

/** Removes what `record` lists, in an order that never leaves a pod address routed off the machine. */
export async function removeRecorded(record: MachineRecord): Promise<void> {
  for (const monitor of record.monitors) if (isRunning(monitor)) await stopPid(monitor.pid);
  for (const link of record.links) await deleteLink(undefined, link);
  for (const cidr of record.unreachable)
    await ip(undefined, [`-${familyOf(cidr)}`, 'route', 'del', 'unreachable', cidr]).catch((err: unknown) => {
      if (!(err instanceof IpError && err.notFound)) throw err;
    });
}

function readRecord(file: string): MachineRecord | undefined {
  try {
    const parsed = MachineRecordSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined; // removed meanwhile, or not JSON
  }
}

const records = (): Array<{ file: string; record: MachineRecord | undefined }> =>
  existsSync(RECORD_DIR)
    ? readdirSync(RECORD_DIR)
        .filter((entry) => entry.endsWith('.json'))
        .map((entry) => join(RECORD_DIR, entry))
        .map((file) => ({ file, record: readRecord(file) }))
    : [];

/** Refuses a link a running cluster made (two clusters with one host namespace's name). */
export function refuseLiveOwner(link: string): void {
  const owner = records().find(({ record }) => record?.links.includes(link) && isRunning(record.owner));
  if (owner?.record)
    throw new Error(
      `${link} in this machine's namespace is the cluster's of pid ${owner.record.owner.pid} ` +
        `(${owner.file}): its nodes use the same host namespace`,
    );
}

/** The records of runs whose owner is gone: what they list is removed, then the record. */
export async function removeLeftovers(log: (line: string) => void): Promise<void> {
  for (const { file, record } of records()) {
    if (!record) {
      log(`netlease: ${file} is not a machine-routes record; left as it is`);
      continue;
    }
    if (isRunning(record.owner)) continue;
    log(`netlease: removing what a stopped run (pid ${record.owner.pid}) left in this machine's routes`);
    await removeRecorded(record);
    rmSync(file, { force: true });
  }
}

/**
 * `unreachable <cidr>` in the machine's namespace for each pool CIDR, refused (PoolRangeTaken)
 * when anything routes that CIDR or a part of it; `claimed` is told of each one added.
 */
export async function claimPoolRanges(cidrs: string[], claimed: (cidr: string) => void): Promise<void> {
  for (const cidr of cidrs) {
    const family = familyOf(cidr);
    const inside = await ipJson(undefined, [`-${family}`, 'route', 'show', 'root', cidr], RouteEntrySchema);
    if (inside.length) throw new PoolRangeTaken(cidr, inside);
    try {
      await ip(undefined, [`-${family}`, 'route', 'add', 'unreachable', cidr]);
    } catch (err) {
      if (err instanceof IpError && err.exists) throw new PoolRangeTaken(cidr, []);
      throw err;
    }
    claimed(cidr);
  }
}
