// The pools as NetleasePool objects (kubernetes.poolObjects). Every replica watches them and applies
// each generation of a spec to its pool workflow (opened, then configured). A change the pool
// refuses (it would move addresses out from under handed-out blocks, domain/pool-change) changes
// nothing and is reported in the object's Ready condition; the worker goes on. `config.pools` holds
// the specs the pools serve (what the activities and the reconciler read); a deleted object's pool
// keeps its entry, for its workflow keeps serving the leases it has. Each object's status (its use
// per family and conditions) is written on a change and every poolStatusIntervalSeconds; a write
// that turns NearlyExhausted or Exhausted True raises a Warning Event on the object, and the use
// goes to netlease_pool_addresses.
import { hostname } from 'node:os';
import type { Client } from '@temporalio/client';
import { ConfigError, type NetleaseConfig, type PoolSpec } from '../../domain/config';
import {
  POOLS_PATH,
  PoolIdentitySchema,
  PoolObjectSchema,
  poolObjectStatus,
  poolSpecOf,
  useCrossings,
  POOL_GROUP,
  POOL_KIND,
  POOL_VERSION,
  type Applied,
  type PoolObject,
} from '../../domain/pool-object';
import type { FamilyUse } from '../../domain/pool-use';
import { eventRecorder } from '../../kubernetes/events';
import type { KubeClients } from '../../kubernetes/kube';
import { writePoolStatus } from '../../kubernetes/pool-objects';
import { watchForever } from '../../kubernetes/watch-loop';
import { showPoolUse } from '../../observability/control-metrics';
import { errorMessage, type Log } from '../../observability/log';
import { openAndConfigurePool } from '../../temporal/pools';
import { readPoolUse } from '../../temporal/pool-use';

export interface PoolObjects {
  /** Applies what is pending and writes every object's status now (also on the timer). */
  refresh(): Promise<void>;
  stop(): void;
}

export interface PoolObjectsSite {
  kube: KubeClients;
  client: Client;
  config: NetleaseConfig;
  statusIntervalSeconds: number;
  log: Log;
}

interface Followed {
  object: PoolObject;
  /** The generation `applied` is about. */
  generation: number;
  applied: Applied;
}

const withSpec = (pools: PoolSpec[], spec: PoolSpec) => [...pools.filter((p) => p.name !== spec.name), spec];

export function followPoolObjects(site: PoolObjectsSite): PoolObjects {
  const { kube, client, config, log } = site;
  const followed = new Map<string, Followed>();
  const events = eventRecorder({ kube, component: 'netlease-control', host: hostname(), log });
  // One step at a time: the watch's handling and the timer's refresh never interleave.
  let turn: Promise<unknown> = Promise.resolve();
  const serial = <T>(step: () => Promise<T>): Promise<T> => {
    const next = turn.then(step);
    turn = next.catch(() => undefined);
    return next;
  };

  /** The spec applied to its pool workflow, or why not (refused and invalid stay until the spec changes). */
  const apply = async (object: PoolObject): Promise<Applied> => {
    const parsed = poolSpecOf(object);
    if ('invalid' in parsed) return { state: 'invalid', message: parsed.invalid };
    const { spec } = parsed;
    try {
      await openAndConfigurePool(client, { ...config, pools: withSpec(config.pools, spec) }, spec);
    } catch (err) {
      if (err instanceof ConfigError) return { state: 'refused', message: err.message };
      return { state: 'pending', message: `not applied yet (${errorMessage(err)}); trying again` };
    }
    config.pools.splice(0, config.pools.length, ...withSpec(config.pools, spec));
    return { state: 'applied' };
  };

  const use = async (names: string[]): Promise<Map<string, FamilyUse[]>> => {
    const served = config.pools.filter((p) => names.includes(p.name));
    try {
      const uses = await readPoolUse(client, config.temporal.taskQueue, served);
      showPoolUse(uses);
      return uses;
    } catch (err) {
      log.warn({ error: errorMessage(err) }, 'reading the pools’ use failed; their status says Unknown');
      return new Map();
    }
  };

  const writeStatus = async (name: string, uses: Map<string, FamilyUse[]>) => {
    const f = followed.get(name);
    if (!f) return;
    const status = poolObjectStatus(f.object, f.applied, uses.get(name), new Date());
    const written = await writePoolStatus(kube, name, status).then(
      () => true,
      (err: unknown) => {
        log.warn({ pool: name, error: errorMessage(err) }, 'writing a NetleasePool status failed');
        return false;
      },
    );
    if (!written) return; // the next write crosses the threshold again
    const crossings = useCrossings(f.object.status?.conditions ?? [], status.conditions);
    // What was written is the status the next write compares with, before the watch brings it back.
    f.object = { ...f.object, status: { ...f.object.status, ...status } };
    const { uid } = f.object.metadata;
    const object = {
      apiVersion: `${POOL_GROUP}/${POOL_VERSION}`,
      kind: POOL_KIND,
      name,
      ...(uid ? { uid } : {}),
    };
    for (const { reason, message } of crossings) events.record({ object, type: 'Warning', reason, message });
  };

  const reapply = async (f: Followed) => {
    const applied = await apply(f.object);
    if (applied.state === 'refused')
      log.warn({ pool: f.object.metadata.name, why: applied.message }, 'NetleasePool change refused');
    Object.assign(f, { applied, generation: f.object.metadata.generation });
  };

  const handle = async (type: string, raw: unknown) => {
    // A deletion a relist inferred carries the object's identity only: its name is enough.
    const deleted = type === 'DELETED' ? PoolIdentitySchema.safeParse(raw) : undefined;
    if (deleted?.success) {
      followed.delete(deleted.data.metadata.name);
      const pool = deleted.data.metadata.name;
      return log.info({ pool }, 'NetleasePool deleted: its pool keeps serving the leases it has');
    }
    const parsed = PoolObjectSchema.safeParse(raw);
    if (!parsed.success) return log.warn({ error: parsed.error.message }, 'not a NetleasePool; ignored');
    const object = parsed.data;
    const { name, generation } = object.metadata;
    const known = followed.get(name);
    if (known) known.object = object; // its latest status too: conditions keep their transition times
    if (known && known.generation === generation && known.applied.state !== 'pending') return;
    const f = known ?? { object, generation, applied: { state: 'pending', message: 'not applied yet' } };
    followed.set(name, f);
    await reapply(f);
    await writeStatus(name, await use([name]));
  };

  const refresh = () =>
    serial(async () => {
      for (const f of followed.values()) if (f.applied.state === 'pending') await reapply(f);
      const uses = await use([...followed.keys()]);
      for (const name of followed.keys()) await writeStatus(name, uses);
    });

  const loop = watchForever(
    kube,
    POOLS_PATH,
    (type, object) => serial(() => handle(type, object)),
    (err) => log.warn({ watch: 'netleasepools', error: errorMessage(err) }, 'watch error; reopening'),
  );
  const timer = setInterval(() => void refresh().catch(() => undefined), site.statusIntervalSeconds * 1000);
  timer.unref();
  return {
    refresh,
    stop() {
      clearInterval(timer);
      loop.stop();
      void events.close();
    },
  };
}
