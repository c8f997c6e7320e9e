// The runtime's ledger of answers, and the history check on it (as etcd's robustness tests and
// Jepsen check a full history rather than samples). Every ADD answer a runtime got is a line in
// `answers.jsonl` (address, pod, sandbox, time); so is the end of each pod's use of its addresses:
// its runtime's DEL, or the pod's removal from the API, whichever comes first. Each answer is an
// interval from the answer to its pod's end (open while the pod lives); no two intervals of
// different pods may share an address and overlap. The check reads the file back: a line it cannot
// parse, or a file with no answer at all, fails it.
import { appendFileSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { inSelectedPool, SELECTED_POOL } from './pools';

const AnswerSchema = z.object({
  kind: z.literal('answer'),
  at: z.number(),
  podUid: z.string().min(1),
  podName: z.string(),
  node: z.string(),
  containerId: z.string(),
  netns: z.string(),
  addresses: z.array(z.string().min(1)).min(1),
  /** The static addresses the pod's annotation asked for. */
  asked: z.array(z.string()).optional(),
  /** The sticky reservation key of a StatefulSet pod: every pod of it answered the same addresses. */
  sticky: z.string().optional(),
  /** The pool the pod's annotation selected (test/soak/pools): its addresses are that pool's. */
  pool: z.string().optional(),
});
const EndSchema = z.object({
  kind: z.literal('end'),
  at: z.number(),
  podUid: z.string().min(1),
  why: z.enum(['del', 'removed']),
});
const EventSchema = z.discriminatedUnion('kind', [AnswerSchema, EndSchema]);
export type Answer = z.infer<typeof AnswerSchema>;
type AnswerEvent = z.infer<typeof EventSchema>;

export class AnswerLog {
  constructor(readonly file: string) {}

  answered(answer: Omit<Answer, 'kind' | 'at'>): void {
    this.write({ kind: 'answer', at: Date.now(), ...answer });
  }

  /** The runtime tore the sandbox down (DEL answered), or the pod is gone from the API. */
  ended(podUid: string, why: 'del' | 'removed'): void {
    this.write({ kind: 'end', at: Date.now(), podUid, why });
  }

  private write(event: AnswerEvent): void {
    appendFileSync(this.file, `${JSON.stringify(event)}\n`);
  }
}

export interface HistoryVerdict {
  answers: number;
  pods: number;
  /**
   * Answers of sticky StatefulSet pods, of static-address pods and of pods that selected the
   * second pool, and what broke any of those promises.
   */
  kept: { sticky: number; static: number; selected: number; broken: string[] };
  /** Addresses answered to two pods whose intervals overlap: each pair once. */
  overlaps: Array<{ address: string; first: Interval; second: Interval }>;
}

export interface Interval {
  podUid: string;
  podName: string;
  containerId: string;
  from: number;
  /** Infinity: the pod's use never ended in the history. */
  to: number;
}

/**
 * Reads the ledger and checks it; throws when it cannot be read or holds no answer. `poolResets`:
 * when (epoch ms) an operator reset the pool workflow, across which a sticky ordinal's idle
 * reservation may be made again with other addresses (docs/configuration.md).
 */
export function checkAnswerHistory(file: string, poolResets: number[] = []): HistoryVerdict {
  const events = readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, i) => {
      const parsed = EventSchema.safeParse(JSON.parse(line));
      if (!parsed.success) throw new Error(`${file}:${i + 1}: ${parsed.error.message}`);
      return parsed.data;
    });
  const answers = events.filter((e): e is Answer => e.kind === 'answer');
  if (answers.length === 0) throw new Error(`${file}: no ADD answer in the ledger`);
  const ends = podEnds(events);
  const intervals = answers.map((a) => intervalOf(a, ends.get(a.podUid)));
  const byAddress = new Map<string, Interval[]>();
  answers.forEach((answer, i) => {
    for (const address of answer.addresses)
      byAddress.set(address, [...(byAddress.get(address) ?? []), intervals[i] as Interval]);
  });
  const overlaps: HistoryVerdict['overlaps'] = [];
  for (const [address, list] of byAddress) overlaps.push(...overlapsOf(address, list));
  const pods = new Set(answers.map((a) => a.podUid)).size;
  const kept = keptPromises(answers, poolResets, firstRemovals(events));
  return { answers: answers.length, pods, overlaps, kept };
}

/**
 * Every pod of a sticky ordinal answered the addresses of the one before it (unless the pool was
 * reset in between); every static pod its own; every pod its pool's (the selected one, or not).
 * An ADD answered after its pod was removed (a call the runtime made before the removal, answered
 * late) promised nothing to an ordinal: the address is its successor's; it is checked for overlaps.
 */
function keptPromises(
  answers: Answer[],
  poolResets: number[],
  removedAt: Map<string, number>,
): HistoryVerdict['kept'] {
  const broken: string[] = [];
  const lastOf = new Map<string, Answer>();
  const text = (a: Answer) => [...a.addresses].sort().join(',');
  const removedBefore = (a: Answer) => (removedAt.get(a.podUid) ?? Infinity) < a.at;
  for (const answer of answers.filter((a) => a.sticky !== undefined && !removedBefore(a))) {
    const key = answer.sticky ?? '';
    const first = lastOf.get(key);
    lastOf.set(key, answer);
    const reset = first && poolResets.some((at) => at > first.at && at < answer.at);
    if (first && !reset && text(first) !== text(answer))
      broken.push(
        `${key}: pod ${answer.podUid} answered ${text(answer)}, pod ${first.podUid} of the same ordinal ${text(first)}`,
      );
  }
  const statics = answers.filter((a) => a.asked !== undefined);
  for (const answer of statics)
    for (const asked of answer.asked ?? [])
      if (!answer.addresses.some((a) => a.split('/')[0] === asked))
        broken.push(
          `pod ${answer.podName} (${answer.podUid}) asked for ${asked} and was answered ${text(answer)}`,
        );
  const selected = answers.filter((a) => a.pool === SELECTED_POOL);
  for (const answer of answers)
    if (answer.addresses.some((a) => inSelectedPool(a)) !== (answer.pool === SELECTED_POOL))
      broken.push(
        `pod ${answer.podName} (${answer.podUid}) selected pool ${answer.pool ?? '(the network config’s)'} ` +
          `and was answered ${text(answer)}`,
      );
  return {
    sticky: answers.filter((a) => a.sticky !== undefined).length,
    static: statics.length,
    selected: selected.length,
    broken,
  };
}

/** When each pod was first removed from the cluster. */
function firstRemovals(events: AnswerEvent[]): Map<string, number> {
  const removed = new Map<string, number>();
  for (const event of events)
    if (event.kind === 'end' && event.why === 'removed' && !removed.has(event.podUid))
      removed.set(event.podUid, event.at);
  return removed;
}

/** Each pod's ends (DELs answered, removal), in order. */
function podEnds(events: AnswerEvent[]): Map<string, number[]> {
  const ends = new Map<string, number[]>();
  for (const event of events)
    if (event.kind === 'end') ends.set(event.podUid, [...(ends.get(event.podUid) ?? []), event.at]);
  return ends;
}

/**
 * From the answer to its pod's first end at or after it (a DEL before any ADD, as a runtime sends
 * for a sandbox that failed, ends nothing; an ADD answered after its pod's removal lasts until its
 * DEL). A pod run again in a new sandbox has no end between its answers: they last to its end.
 */
function intervalOf(answer: Answer, ends: number[] | undefined): Interval {
  return {
    podUid: answer.podUid,
    podName: answer.podName,
    containerId: answer.containerId,
    from: answer.at,
    to: ends?.find((at) => at >= answer.at) ?? Infinity,
  };
}

/** Pairs of intervals of different pods that overlap, by a sweep in start order. */
function overlapsOf(address: string, intervals: Interval[]): HistoryVerdict['overlaps'] {
  const sorted = [...intervals].sort((a, b) => a.from - b.from);
  const found: HistoryVerdict['overlaps'] = [];
  const seen = new Set<string>();
  for (let i = 0; i < sorted.length; i++) {
    const first = sorted[i] as Interval;
    for (let j = i + 1; j < sorted.length; j++) {
      const second = sorted[j] as Interval;
      if (second.from >= first.to) break; // sorted by start: no later one overlaps `first` either
      const key = [first.podUid, second.podUid].sort().join(' ');
      if (first.podUid === second.podUid || seen.has(key)) continue;
      seen.add(key);
      found.push({ address, first, second });
    }
  }
  return found;
}
