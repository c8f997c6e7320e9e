// contend: the leader election decision of one round, as client-go's LeaderElector decides it,
// with the clock handed in. Times are ms on "our" clock unless named the holder's.
import {
  contend,
  handedBack,
  leadershipTimings,
  observe,
  type ContenderView,
  type Decision,
  type LeaseRead,
  type LeaseRecord,
} from '../../domain/leadership';

/** Our lease is 3 s: a round every 1 s, a holder stops leading 2 s after its last renewal began. */
const DURATION_S = 3;
const T = 1_000_000;
const us = (over: Partial<ContenderView> = {}): ContenderView => ({
  identity: 'us',
  durationSeconds: DURATION_S,
  ...over,
});
const record = (over: Partial<LeaseRecord> = {}): LeaseRecord => ({
  holder: 'them',
  acquireTime: T - 60_000,
  renewTime: T - 500,
  durationSeconds: DURATION_S,
  transitions: 4,
  ...over,
});
const read = (over: Partial<LeaseRecord> = {}): LeaseRead => ({ kind: 'read', record: record(over) });
/** We saw `seen` first at `at` (our clock). */
const seenAt = (seen: LeaseRecord, at: number) => observe(undefined, seen, at);

interface Row {
  name: string;
  view: ContenderView;
  lease: LeaseRead;
  now: number;
  expected: Partial<Decision>;
}

const rows: Row[] = [
  {
    name: 'no Lease: acquire it, transitions 0, both times now',
    view: us(),
    lease: { kind: 'absent' },
    now: T,
    expected: {
      kind: 'acquire',
      write: { holder: 'us', acquireTime: T, renewTime: T, durationSeconds: DURATION_S, transitions: 0 },
      nextAt: T + 1000,
    },
  },
  {
    name: 'ours: renew it, keeping when it was acquired and the transitions',
    view: us({ renewedAt: T - 1000 }),
    lease: read({ holder: 'us', acquireTime: T - 9000 }),
    now: T,
    expected: {
      kind: 'renew',
      write: {
        holder: 'us',
        acquireTime: T - 9000,
        renewTime: T,
        durationSeconds: DURATION_S,
        transitions: 4,
      },
    },
  },
  {
    name: "another's, first seen now: wait, looking again a round later",
    view: us(),
    lease: read(),
    now: T,
    expected: { kind: 'wait', holder: 'them', observed: seenAt(record(), T), nextAt: T + 1000 },
  },
  {
    name: "another's, unchanged since 2.5 s: wait, looking again when it lapses",
    view: us({ observed: seenAt(record(), T - 2500) }),
    lease: read(),
    now: T,
    expected: { kind: 'wait', holder: 'them', observed: seenAt(record(), T - 2500), nextAt: T + 500 },
  },
  {
    name: "another's, unchanged for its duration: take it over, one more transition",
    view: us({ observed: seenAt(record(), T - 3000) }),
    lease: read(),
    now: T,
    expected: {
      kind: 'acquire',
      write: { holder: 'us', acquireTime: T, renewTime: T, durationSeconds: DURATION_S, transitions: 5 },
    },
  },
  {
    name: "another's, renewed since we last looked: seen anew now, so wait",
    view: us({ observed: seenAt(record(), T - 10_000) }),
    lease: read({ renewTime: T - 100 }),
    now: T,
    expected: { kind: 'wait', holder: 'them', observed: seenAt(record({ renewTime: T - 100 }), T) },
  },
  {
    name: "another's, judged by the duration it wrote, not ours",
    view: us({ observed: seenAt(record({ durationSeconds: 10 }), T - 5000) }),
    lease: read({ durationSeconds: 10 }),
    now: T,
    expected: { kind: 'wait', holder: 'them', nextAt: T + 1000 },
  },
  {
    name: 'handed back (no holder): take it at once',
    view: us(),
    lease: read({ holder: '', durationSeconds: 1 }),
    now: T,
    expected: { kind: 'acquire', write: expect.objectContaining({ holder: 'us', transitions: 5 }) },
  },
  {
    name: "clock skew: a holder's renewTime an hour ahead of our clock does not keep it past its duration",
    view: us({ observed: seenAt(record({ renewTime: T + 3_600_000 }), T - 3000) }),
    lease: read({ renewTime: T + 3_600_000 }),
    now: T,
    expected: { kind: 'acquire' },
  },
  {
    name: "clock skew: a holder's renewTime an hour behind our clock, first seen now, is not lapsed",
    view: us(),
    lease: read({ renewTime: T - 3_600_000 }),
    now: T,
    expected: { kind: 'wait', holder: 'them' },
  },
  {
    name: 'leading, this round unanswered, still in time: nothing changes',
    view: us({ renewedAt: T - 1999 }),
    lease: { kind: 'unknown' },
    now: T,
    expected: { kind: 'wait', holder: undefined, nextAt: T + 1000 },
  },
  {
    name: 'leading, no renewal for two thirds of the duration: give up leading',
    view: us({ renewedAt: T - 2000 }),
    lease: { kind: 'unknown' },
    now: T,
    expected: { kind: 'give up', why: 'could not renew the Lease in time' },
  },
  {
    name: 'leading, a read that answers only after the deadline: give up all the same',
    view: us({ renewedAt: T - 2500 }),
    lease: read({ holder: 'us' }),
    now: T,
    expected: { kind: 'give up' },
  },
  {
    name: 'not leading, this round unanswered: wait',
    view: us(),
    lease: { kind: 'unknown' },
    now: T,
    expected: { kind: 'wait', holder: undefined },
  },
];

test.each(rows)('$name', ({ view, lease, now, expected }) => {
  expect(contend(view, lease, now)).toMatchObject(expected);
});

test('a record seen unchanged keeps when it was first seen; any field changed is seen anew', () => {
  const first = seenAt(record(), T);
  expect(observe(first, record(), T + 5000)).toBe(first);
  for (const changed of [{ holder: 'other' }, { renewTime: T }, { acquireTime: T }, { transitions: 5 }])
    expect(observe(first, record(changed), T + 5000).at).toBe(T + 5000);
});

test('the holder hands it back with no holder and a 1-s duration; another cannot hand it back', () => {
  expect(handedBack(record({ holder: 'us' }), 'us', T)).toEqual(
    record({ holder: '', renewTime: T, durationSeconds: 1 }),
  );
  expect(handedBack(record(), 'us', T)).toBeUndefined();
});

test('a round every third of the duration, at least 200 ms apart; giving up at two thirds', () => {
  expect(leadershipTimings(3)).toEqual({ retryMs: 1000, giveUpMs: 2000 });
  expect(leadershipTimings(0.3)).toEqual({ retryMs: 200, giveUpMs: 200 });
});
