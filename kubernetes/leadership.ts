// One of several replicas does a piece of work at a time (the control workers' watches), chosen
// by a coordination.k8s.io Lease as kube-controller-manager's replicas choose theirs. Each round
// reads the Lease and does what `contend` (domain/leadership) decides: acquire, renew, wait, or
// give up leading. Writes carry the object's resourceVersion, so of two contenders only one wins
// a round.
import type { V1Lease, V1LeaseSpec } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import {
  contend,
  handedBack,
  leadershipTimings,
  type ContenderView,
  type Decision,
  type LeaseRead,
  type LeaseRecord,
} from '../domain/leadership';
import { isConflict, isNotFound, kubeCall, within, type KubeCallOptions, type KubeClients } from './kube';

export interface LeadershipOptions {
  namespace: string;
  /** The Lease object's name. */
  name: string;
  /** This contender, unique among them (a pod name and PID). */
  identity: string;
  /** A holder not seen renewing for this long is taken over. */
  durationSeconds: number;
  /** This contender's clock (ms); only its own readings are ever compared. */
  clock?: () => number;
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

const UNKNOWN = { kind: 'unknown' } as const;

/** The Lease as `contend` reads it; no duration in it is taken as ours. */
function recordOf(lease: V1Lease, durationSeconds: number): LeaseRecord {
  const spec = lease.spec ?? {};
  return {
    holder: spec.holderIdentity ?? '',
    acquireTime: spec.acquireTime?.valueOf(),
    renewTime: spec.renewTime?.valueOf(),
    durationSeconds: spec.leaseDurationSeconds ?? durationSeconds,
    transitions: spec.leaseTransitions ?? 0,
  };
}

export function holdLeadership(
  clients: KubeClients,
  options: LeadershipOptions,
  events: LeadershipEvents,
): Leadership {
  const api = clients.config.makeApiClient(clients.kube.CoordinationV1Api);
  const { namespace, name, identity, durationSeconds, clock = Date.now } = options;
  const { retryMs, giveUpMs } = leadershipTimings(durationSeconds);
  const view: ContenderView = { identity, durationSeconds };
  let holds = false; // the Lease names us as of the last round that answered
  let stopWork: (() => void) | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let giveUp: NodeJS.Timeout | undefined;
  let round: Promise<void> = Promise.resolve();
  // The API parses these times with microseconds only: a Date's milliseconds are refused.
  const micro = (at: number | undefined) => (at === undefined ? undefined : new clients.kube.V1MicroTime(at));
  // A call on a dead connection must not hold a round (or stop()): each has a third of the lease.
  const bounded = <T>(call: (options: KubeCallOptions) => Promise<T>): Promise<T> =>
    kubeCall(`Lease ${namespace}/${name}`, retryMs, call);

  const read = async (): Promise<V1Lease | undefined> =>
    bounded((options) => api.readNamespacedLease({ name, namespace }, options)).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });

  /** `record` written over `current` (other fields kept), or created when there is none. */
  const write = async (current: V1Lease | undefined, record: LeaseRecord): Promise<void> => {
    const spec: V1LeaseSpec = {
      ...current?.spec,
      holderIdentity: record.holder,
      leaseDurationSeconds: record.durationSeconds,
      acquireTime: micro(record.acquireTime),
      renewTime: micro(record.renewTime),
      leaseTransitions: record.transitions,
    };
    if (!current) {
      const body = { metadata: { name, namespace }, spec };
      await bounded((options) => api.createNamespacedLease({ namespace, body }, options));
    } else {
      const body = { ...current, spec };
      await bounded((options) => api.replaceNamespacedLease({ name, namespace, body }, options));
    }
  };

  const lose = (why: string) => {
    view.renewedAt = undefined;
    clearTimeout(giveUp);
    if (!stopWork) return;
    stopWork();
    stopWork = undefined;
    events.changed?.(false, why);
  };

  /** Others may take over a duration after they saw a renewal: the decision stops us well before. */
  const armGiveUp = () => {
    clearTimeout(giveUp);
    if (view.renewedAt === undefined) return;
    giveUp = setTimeout(
      () => {
        apply(contend(view, UNKNOWN, clock()));
        armGiveUp();
      },
      Math.max(0, view.renewedAt + giveUpMs - clock()),
    );
  };

  /** A decision that needs no write. */
  const apply = (decision: Decision) => {
    view.observed = decision.observed ?? view.observed;
    if (decision.kind === 'give up') lose(decision.why);
    else if (decision.kind === 'wait' && decision.holder !== undefined) {
      holds = false;
      lose('another replica holds the Lease');
    }
  };

  /** Holds the Lease from the round that began at `began`. */
  const held = (began: number) => {
    holds = true;
    view.renewedAt = began;
    armGiveUp();
    if (!stopWork && !stopped) {
      stopWork = events.lead();
      events.changed?.(true, `holds Lease ${namespace}/${name}`);
    }
  };

  /** One round; resolves to when the next begins. */
  const once = async (): Promise<number> => {
    const began = clock();
    try {
      const current = await read();
      const lease: LeaseRead = current
        ? { kind: 'read', record: recordOf(current, durationSeconds) }
        : { kind: 'absent' };
      const decision = contend(view, lease, clock());
      apply(decision);
      if (decision.kind === 'acquire' || decision.kind === 'renew') {
        await write(current, decision.write);
        held(began);
      }
      return decision.nextAt;
    } catch (err) {
      if (!isConflict(err)) events.error?.(err); // a conflict: another contender won
      apply(contend(view, UNKNOWN, clock()));
      return began + retryMs;
    }
  };

  const schedule = (nextAt: number) => {
    if (stopped) return;
    timer = setTimeout(
      () => {
        round = once().then(schedule);
      },
      Math.max(0, nextAt - clock()),
    );
  };
  round = once().then(schedule);

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
    const back = current && handedBack(recordOf(current, durationSeconds), identity, clock());
    if (back) await write(current, back);
  }
}
