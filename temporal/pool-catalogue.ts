// The pools a control plane serves, with their selectors, as pool selection on the node reads them
// (domain/pool-selection): the open pool workflows on the control plane's task queue (a
// visibility list), each asked for the spec it serves (its `spec` query, not `state` with the
// block table; `state` only of a control worker from before `spec`). Kept for a while per task
// queue: pools change rarely, and an ADD must not wait for a list and a query per pool. A pool
// the kept list lacks is asked for again at once (`fresh`): a pool just added is not refused as
// unknown.
import { QueryNotRegisteredError, type Client } from '@temporalio/client';
import type { PoolSpec } from '../domain/config';
import type { PoolSelectors } from '../domain/pool-selection';
import { poolWorkflowId } from '../domain/ids';
import { poolSpecQuery, poolStateQuery } from '../workflows/pool-messages';
import { openPoolsQuery } from './visibility';
import { unlessGone } from './workflow-gone';

/** How long a read catalogue is used; and how soon after a read it is not read again even when asked. */
const KEPT_MS = 30_000;
const FRESH_ENOUGH_MS = 1_000;
/** Up to this age a kept catalogue still answers while a read renews it; older, the read is waited for. */
const STALE_ANSWERS_MS = 2 * KEPT_MS;

interface Kept {
  pools: PoolSelectors[];
  readAt: number;
}

const kept = new Map<string, Kept>();
/** The read under way per task queue: the ADDs that find the catalogue old share it. */
const reading = new Map<string, Promise<PoolSelectors[]>>();

const selectorsOf = ({ name, namespaceSelector, nodeSelector }: PoolSelectors): PoolSelectors => ({
  name,
  ...(namespaceSelector ? { namespaceSelector } : {}),
  ...(nodeSelector ? { nodeSelector } : {}),
});

/** The spec a pool workflow serves; through `state` when its worker does not know `spec` yet. */
async function specOf(client: Client, workflowId: string): Promise<PoolSpec> {
  const handle = client.workflow.getHandle(workflowId);
  try {
    return (await handle.query(poolSpecQuery)).spec;
  } catch (err) {
    if (!(err instanceof QueryNotRegisteredError)) throw err;
    return (await handle.query(poolStateQuery)).spec;
  }
}

/** Reads the served pools now: the open pool workflows on `taskQueue`, each one's spec. */
async function readCatalogue(client: Client, taskQueue: string): Promise<PoolSelectors[]> {
  const ids: string[] = [];
  for await (const execution of client.workflow.list({ query: openPoolsQuery(taskQueue) }))
    ids.push(execution.workflowId);
  const specs = await Promise.all(ids.map((id) => unlessGone(() => specOf(client, id), undefined)));
  return specs
    .filter((s) => s !== undefined)
    .map(selectorsOf)
    .sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** One read of `taskQueue`'s catalogue at a time; its result is kept. */
function readShared(client: Client, taskQueue: string, key: string, now: number): Promise<PoolSelectors[]> {
  const running = reading.get(key);
  if (running) return running;
  const read = readCatalogue(client, taskQueue)
    .then((pools) => {
      kept.set(key, { pools, readAt: now });
      return pools;
    })
    .finally(() => reading.delete(key));
  reading.set(key, read);
  return read;
}

/**
 * The served pools and their selectors, as kept (read when older than KEPT_MS); `fresh`: read
 * again unless read within the last second. An ADD does not wait for the renewal of a catalogue
 * less than STALE_ANSWERS_MS old: it answers from the kept one while one read renews it (before,
 * every ADD of the second the catalogue aged made a list and a query per pool: the @16 p99).
 */
export async function servedPools(
  client: Client,
  taskQueue: string,
  fresh = false,
  now = Date.now(),
): Promise<PoolSelectors[]> {
  const key = `${client.options.namespace}/${taskQueue}`;
  const current = kept.get(key);
  const age = current ? now - current.readAt : Infinity;
  if (current && age < (fresh ? FRESH_ENOUGH_MS : KEPT_MS)) return current.pools;
  const read = readShared(client, taskQueue, key, now);
  if (!current || fresh || age >= STALE_ANSWERS_MS) return read;
  read.catch(() => undefined); // the next ADD past the limit waits for a read and hears its error
  return current.pools;
}

/**
 * The selectors one pool workflow serves (its `spec` query; no visibility list), undefined when it
 * never ran: a NetleasePool object the node agent cannot judge from its status (kubernetes/pool-selectors).
 */
export async function servedPool(client: Client, pool: string): Promise<PoolSelectors | undefined> {
  const spec = await servedSpec(client, pool);
  return spec && selectorsOf(spec);
}

/** The spec one pool workflow serves; undefined when it never ran. */
export const servedSpec = (client: Client, pool: string): Promise<PoolSpec | undefined> =>
  unlessGone(() => specOf(client, poolWorkflowId(pool)), undefined);
