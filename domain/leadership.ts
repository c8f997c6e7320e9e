// Who leads, decided as client-go's LeaderElector decides it, with no clock of its own: a
// contender is handed the Lease as read and the time by its own clock. A holder not seen renewing
// for the lease's duration is taken over; "seen" is when this contender saw the record change, by
// its own clock, never the holder's renewTime, so contenders' clocks need not agree. A holder stops
// leading when it could not renew for two thirds of the duration: by then nobody may take over yet.

/** A coordination.k8s.io Lease's spec, its times as milliseconds (written by the holder's clock). */
export interface LeaseRecord {
  /** '' when nobody holds it (handed back). */
  holder: string;
  acquireTime?: number;
  renewTime?: number;
  durationSeconds: number;
  transitions: number;
}

/** What the contender saw of the Lease, and when by its own clock it first saw it so. */
export interface Observation {
  record: string;
  at: number;
}

export interface ContenderView {
  identity: string;
  /** The duration this contender writes when it holds the Lease. */
  durationSeconds: number;
  observed?: Observation;
  /** When (by its clock) the round that last renewed the Lease began; undefined while not leading. */
  renewedAt?: number;
}

/** The Lease this round: absent, as read, or unknown (a call failed, or no round answered yet). */
export type LeaseRead = { kind: 'absent' } | { kind: 'read'; record: LeaseRecord } | { kind: 'unknown' };

export type Decision =
  | { kind: 'acquire'; write: LeaseRecord; observed?: Observation; nextAt: number }
  | { kind: 'renew'; write: LeaseRecord; observed: Observation; nextAt: number }
  /** Another holds it (`holder`), or the Lease is unknown this round (undefined): nothing changes. */
  | { kind: 'wait'; holder: string | undefined; observed?: Observation; nextAt: number }
  | { kind: 'give up'; why: string; observed?: Observation; nextAt: number };

/** Renew three times a lease (at most every 200 ms); stop leading two thirds of it after a renewal began. */
export function leadershipTimings(durationSeconds: number): { retryMs: number; giveUpMs: number } {
  const durationMs = durationSeconds * 1000;
  return { retryMs: Math.max(durationMs / 3, 200), giveUpMs: (durationMs * 2) / 3 };
}

const recordKey = (r: LeaseRecord): string =>
  [r.holder, r.acquireTime ?? '', r.renewTime ?? '', r.durationSeconds, r.transitions].join(' ');

/** A record seen unchanged keeps the time it was first seen; any change is seen now. */
export function observe(previous: Observation | undefined, record: LeaseRecord, now: number): Observation {
  const key = recordKey(record);
  return previous?.record === key ? previous : { record: key, at: now };
}

/** One round's decision for `view` at `now` (its own clock). */
export function contend(view: ContenderView, lease: LeaseRead, now: number): Decision {
  const { retryMs, giveUpMs } = leadershipTimings(view.durationSeconds);
  const nextAt = now + retryMs;
  const observed = lease.kind === 'read' ? observe(view.observed, lease.record, now) : view.observed;
  if (view.renewedAt !== undefined && now - view.renewedAt >= giveUpMs)
    return { kind: 'give up', why: 'could not renew the Lease in time', observed, nextAt };
  if (lease.kind === 'unknown') return { kind: 'wait', holder: undefined, observed, nextAt };
  if (lease.kind === 'absent') return { kind: 'acquire', write: ownRecord(view, now, {}), nextAt };
  return decideOnRecord(view, lease.record, observe(view.observed, lease.record, now), now, nextAt);
}

/** Ours renewed; another's waited on until it lapses by our clock; nobody's taken. */
function decideOnRecord(
  view: ContenderView,
  record: LeaseRecord,
  observed: Observation,
  now: number,
  nextAt: number,
): Decision {
  if (record.holder === view.identity) {
    const kept = { acquireTime: record.acquireTime ?? now, transitions: record.transitions };
    return { kind: 'renew', write: ownRecord(view, now, kept), observed, nextAt };
  }
  const lapsesAt = observed.at + record.durationSeconds * 1000;
  if (record.holder && now < lapsesAt)
    return { kind: 'wait', holder: record.holder, observed, nextAt: Math.min(nextAt, lapsesAt) };
  const write = ownRecord(view, now, { transitions: record.transitions + 1 });
  return { kind: 'acquire', write, observed, nextAt };
}

const ownRecord = (view: ContenderView, now: number, over: Partial<LeaseRecord>): LeaseRecord => ({
  holder: view.identity,
  acquireTime: now,
  renewTime: now,
  durationSeconds: view.durationSeconds,
  transitions: 0,
  ...over,
});

/** The Lease handed back by `identity` at `now` (anyone takes it next); undefined if not its to give. */
export function handedBack(record: LeaseRecord, identity: string, now: number): LeaseRecord | undefined {
  if (record.holder !== identity) return undefined;
  return { ...record, holder: '', renewTime: now, durationSeconds: 1 };
}
