// Which wedged lease runs a reconciler sweep ends: those whose pending task reached the threshold,
// unless so many are wedged that it looks like a worker that cannot run their histories.
import { wedgedToEnd } from '../../activities/wedged-leases';

const settings = { failedTaskAttempts: 10, maxEndedPerRun: 2 };
const lease = (id: string, attempt?: number) => ({ id, ...(attempt ? { task: { attempt } } : {}) });

test('the runs at or past the threshold are ended; a task that failed a few times or none is not', () => {
  const { end, heldBack } = wedgedToEnd(
    [lease('a', 10), lease('b', 3), lease('c'), lease('d', 99)],
    settings,
  );
  expect(end.map((l) => l.id)).toEqual(['a', 'd']);
  expect(heldBack).toBe(0);
});

test('more wedged runs than maxEndedPerRun in one sweep: none is ended, all held back', () => {
  const { end, heldBack } = wedgedToEnd([lease('a', 10), lease('b', 11), lease('c', 12)], settings);
  expect(end).toEqual([]);
  expect(heldBack).toBe(3);
});
