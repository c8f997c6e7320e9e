// The soak's answer history (test/soak/answers): overlapping answers of one address to two pods,
// and the kept promises: every pod of a sticky ordinal answered the same addresses, every static
// pod the address it asked for, every pod its pool's. Each check is seen to fail on a history that
// breaks it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkAnswerHistory } from '../soak/answers';
import { SELECTED_POOL } from '../soak/pools';

const dir = mkdtempSync(join(tmpdir(), 'netlease-answers-'));
let n = 0;

function history(lines: object[]): string {
  const file = join(dir, `answers-${++n}.jsonl`);
  writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n'));
  return file;
}

const answer = (at: number, podUid: string, addresses: string[], more: object = {}) => ({
  kind: 'answer',
  at,
  podUid,
  podName: `p-${podUid}`,
  node: 'n1',
  containerId: `c-${podUid}`,
  netns: 'ns',
  addresses,
  ...more,
});
const end = (at: number, podUid: string) => ({ kind: 'end', at, podUid, why: 'del' });

test('a sticky ordinal whose pods came one after the other with the same addresses keeps its promise', () => {
  const sticky = { sticky: 'soak/db/0' };
  const verdict = checkAnswerHistory(
    history([answer(1, 'a', ['10.0.0.5/26'], sticky), end(2, 'a'), answer(3, 'b', ['10.0.0.5/26'], sticky)]),
  );
  expect(verdict).toMatchObject({ overlaps: [], kept: { sticky: 2, static: 0, selected: 0, broken: [] } });
});

test('an ordinal answered other addresses, or two live pods holding its address, are both found', () => {
  const sticky = { sticky: 'soak/db/1' };
  const verdict = checkAnswerHistory(
    history([
      answer(1, 'a', ['10.0.0.5/26'], sticky),
      answer(3, 'b', ['10.0.0.6/26'], sticky),
      answer(4, 'c', ['10.0.0.5/26'], sticky),
    ]),
  );
  expect(verdict.kept.broken).toEqual([
    'soak/db/1: pod b answered 10.0.0.6/26, pod a of the same ordinal 10.0.0.5/26',
    'soak/db/1: pod c answered 10.0.0.5/26, pod b of the same ordinal 10.0.0.6/26',
  ]);
  expect(verdict.overlaps.map((o) => [o.address, o.first.podUid, o.second.podUid])).toEqual([
    ['10.0.0.5/26', 'a', 'c'],
  ]);
});

test('a sticky pod answered after its removal promised nothing to its ordinal; its successor did', () => {
  // The soak (seed 1128290416): db-2's ADD was answered 22 s after the pod was removed, with
  // another address than its predecessor's (which its successor then kept).
  const sticky = { sticky: 'soak/db/3' };
  const removed = (at: number, podUid: string) => ({ kind: 'end', at, podUid, why: 'removed' });
  const before = [answer(1, 'a', ['10.0.0.5/26'], sticky), end(2, 'a')];
  const late = answer(4, 'b', ['10.0.0.9/26'], sticky);
  const after = [end(5, 'b'), answer(6, 'c', ['10.0.0.5/26'], sticky)];
  expect(checkAnswerHistory(history([...before, removed(3, 'b'), late, ...after])).kept.broken).toEqual([]);
  // Answered before its removal, it broke the promise.
  expect(checkAnswerHistory(history([...before, late, removed(4.5, 'b'), ...after])).kept.broken).toEqual([
    'soak/db/3: pod b answered 10.0.0.9/26, pod a of the same ordinal 10.0.0.5/26',
    'soak/db/3: pod c answered 10.0.0.5/26, pod b of the same ordinal 10.0.0.9/26',
  ]);
});

test('across an operator’s reset of the pool an ordinal may get other addresses, and only then', () => {
  const sticky = { sticky: 'soak/db/2' };
  const file = history([
    answer(1, 'a', ['10.0.0.5/26'], sticky),
    end(2, 'a'),
    answer(4, 'b', ['10.0.0.7/26'], sticky),
    end(5, 'b'),
    answer(6, 'c', ['10.0.0.8/26'], sticky),
  ]);
  expect(checkAnswerHistory(file, [3]).kept.broken).toEqual([
    'soak/db/2: pod c answered 10.0.0.8/26, pod b of the same ordinal 10.0.0.7/26',
  ]);
});

test('a static pod answered another address than it asked for is found', () => {
  const verdict = checkAnswerHistory(
    history([
      answer(1, 'a', ['10.0.0.9/26'], { asked: ['10.0.0.9'] }),
      answer(2, 'b', ['10.0.0.7/26'], { asked: ['10.0.0.8'] }),
    ]),
  );
  expect(verdict.kept).toEqual({
    sticky: 0,
    static: 2,
    selected: 0,
    broken: ['pod p-b (b) asked for 10.0.0.8 and was answered 10.0.0.7/26'],
  });
});

test('a pod that selected the second pool answered another pool’s address, or one that did not answered its, is found', () => {
  const selected = { pool: SELECTED_POOL };
  const verdict = checkAnswerHistory(
    history([
      answer(1, 'a', ['198.20.0.2/26', 'fd00:20::2/120'], selected),
      answer(2, 'b', ['198.18.0.2/26'], selected),
      answer(3, 'c', ['198.18.0.3/26', 'fd00:18::3/120']),
      answer(4, 'd', ['198.18.0.4/26', 'fd00:20::4/120']),
    ]),
  );
  expect(verdict.kept).toEqual({
    sticky: 0,
    static: 0,
    selected: 2,
    broken: [
      `pod p-b (b) selected pool ${SELECTED_POOL} and was answered 198.18.0.2/26`,
      'pod p-d (d) selected pool (the network config’s) and was answered 198.18.0.4/26,fd00:20::4/120',
    ],
  });
});
