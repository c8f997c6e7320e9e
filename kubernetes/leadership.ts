// One of several replicas does a piece of work at a time (the control workers' watches), chosen
// by a coordination.k8s.io Lease as kube-controller-manager's replicas choose theirs. The holder
// renews it; a holder not seen renewing for the lease's duration (by our own clock, so clocks need
// not agree) is taken over, and a holder that cannot renew stops before that. Writes carry the
// object's resourceVersion, so of two contenders only one wins a round.
import type { V1Lease } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { isConflict, isNotFound, kubeCall, within, type KubeCallOptions, type KubeClients } from './kube';

export interface LeadershipOptions {
  namespace: string;
  /** The Lease object's name. */
  name: string;
  /** This contender, unique among them (a pod name and PID). */
  identity: string;
  /** A holder not seen renewing for this long is taken over. */
  durationSeconds: number;
}

export interface LeadershipEvents {
  /** Became the holder: start the work; the function returned stops it. */
  lead(): () => void;
  /** Leading changed, and why (logs). */
  changed?(leading: boolean, why: string): void;
  /** A read or write the API refused (not a lost race). */
  error?(err: unknown): void;
}

export interface Leadership {
  readonly leading: boolean;
  /** Stops contending; a holder stops its work and hands the Lease back for the next at once. */
  stop(): Promise<void>;
}

export function holdLeadership(
  clients: KubeClients,
  options: LeadershipOptions,
  events: LeadershipEvents,
): Leadership {
  const api = clients.config.makeApiClient(clients.kube.CoordinationV1Api);
  const { namespace, name, identity, durationSeconds } = options;
  const durationMs = durationSeconds * 1000;
  // Renew three times a lease; stop leading two thirds of it after the last renewal began.
  const retryMs = Math.max(durationMs / 3, 200);
  const giveUpMs = (durationMs * 2) / 3;
  let observed: { record: string; at: number } | undefined;
  let holds = false; // the Lease names us as of the last round that answered
  let stopWork: (() => void) | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let giveUp: NodeJS.Timeout | undefined;
  let round: Promise<void> = Promise.resolve();
  // The API parses these times with microseconds only: a Date's milliseconds are refused.
  const micro = (at: Date | number = Date.now()) => new clients.kube.V1MicroTime(new Date(at).getTime());
  // A call on a dead connection must not hold a round (or stop()): each has a third of the lease.
  const bounded = <T>(call: (options: KubeCallOptions) => Promise<T>): Promise<T> =>
    kubeCall(`Lease ${namespace}/${name}`, retryMs, call);

  const read = async (): Promise<V1Lease | undefined> =>
    bounded((options) => api.readNamespacedLease({ name, namespace }, options)).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });

  /** One round: true when this contender holds the Lease after it. */
  const contend = async (): Promise<boolean> => {
    const now = micro();
    const current = await read();
    if (!current) {
      const spec = {
        holderIdentity: identity,
        leaseDurationSeconds: durationSeconds,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: 0,
      };
      const body = { metadata: { name, namespace }, spec };
      await bounded((options) => api.createNamespacedLease({ namespace, body }, options));
      return true;
    }
    const spec = current.spec ?? {};
    const record = `${spec.holderIdentity ?? ''} ${String(spec.renewTime?.valueOf() ?? '')}`;
    if (observed?.record !== record) observed = { record, at: Date.now() };
    const mine = spec.holderIdentity === identity;
    const lapsed = Date.now() - observed.at > (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (!mine && spec.holderIdentity && !lapsed) return false;
    const acquired = spec.acquireTime ? micro(spec.acquireTime) : now;
    const taken = mine
      ? { acquireTime: acquired }
      : { acquireTime: now, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 };
    const next = {
      ...spec,
      ...taken,
      holderIdentity: identity,
      leaseDurationSeconds: durationSeconds,
      renewTime: now,
    };
    const body = { ...current, spec: next };
    await bounded((options) => api.replaceNamespacedLease({ name, namespace, body }, options));
    return true;
  };

  const lose = (why: string) => {
    clearTimeout(giveUp);
    if (!stopWork) return;
    stopWork();
    stopWork = undefined;
    events.changed?.(false, why);
  };

  const once = async () => {
    const began = Date.now();
    try {
      holds = await contend();
      if (!holds) return lose('another replica holds the Lease');
      // Others may take over durationMs after they saw this renewal: stop well before that.
      clearTimeout(giveUp);
      giveUp = setTimeout(() => lose('could not renew the Lease in time'), giveUpMs - (Date.now() - began));
      if (!stopWork && !stopped) {
        stopWork = events.lead();
        events.changed?.(true, `holds Lease ${namespace}/${name}`);
      }
    } catch (err) {
      if (!isConflict(err)) events.error?.(err); // a conflict: another contender won
    }
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      round = once().finally(schedule);
    }, retryMs);
  };
  round = once().finally(schedule);

  return {
    get leading() {
      return stopWork !== undefined;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await within(round, retryMs, 'the last Lease round').catch(() => undefined);
      lose('stopping');
      // Held (even if a round acquired it as stop began): hand it back for the next at once.
      if (holds) await handBack().catch((err: unknown) => events.error?.(err));
    },
  };

  /** An empty holder with a one-second duration: the next contender takes it on its next round. */
  async function handBack(): Promise<void> {
    holds = false;
    const current = await read();
    if (current?.spec?.holderIdentity !== identity) return;
    const { acquireTime } = current.spec;
    const times = { renewTime: micro(), ...(acquireTime ? { acquireTime: micro(acquireTime) } : {}) };
    const spec = { ...current.spec, ...times, holderIdentity: '', leaseDurationSeconds: 1 };
    const body = { ...current, spec };
    await bounded((options) => api.replaceNamespacedLease({ name, namespace, body }, options));
  }
}
