// The control worker's per-node queue: a burst goes to the node workflow as batches, one in
// flight per node, each operation answered on its own.
import { NodeBatches, OperationFailed } from '../../activities/node-batches';
import type { AddressGrant } from '../../domain/allocation';
import { FailureType } from '../../domain/lease';
import type { NodeOperation, OperationOutcome } from '../../workflows/node-messages';
import { waitFor } from '../../tools/processes';
import { gate } from '../harness/workflow-env';

const pool = { name: 'p', cidrs: ['198.18.0.0/16'], blockSize: { ipv4: 26, ipv6: 120 }, exclude: [] };
const allocation = (owner: string): NodeOperation => ({
  kind: 'allocate',
  id: `allocate/${owner}/r`,
  request: { owner, podUid: owner, pool: { ...pool, gateway: 'first' }, run: 'r' },
});
const grant = (id: string): AddressGrant[] => [{ family: 4, address: id, prefixLength: 26 }];
const granted = (ops: NodeOperation[]): OperationOutcome[] =>
  ops.map((op) => ({ id: op.id, grants: grant(op.id) }));

type Answer = OperationOutcome[] | Error;

/** A node that answers each batch (or fails the call) when the test opens its gate. */
function heldNode() {
  const calls: Array<{ node: string; ops: NodeOperation[]; answer: ReturnType<typeof gate<Answer>> }> = [];
  const send = async (node: string, ops: NodeOperation[]) => {
    const answer = gate<Answer>();
    calls.push({ node, ops, answer });
    const outcome = await answer.opened;
    if (outcome instanceof Error) throw outcome;
    return outcome;
  };
  /** Until the batcher has made `count` calls. */
  const sent = async (count: number) =>
    expect(await waitFor(() => calls.length >= count, 5000, 1)).toBe(true);
  return { calls, sent, batches: new NodeBatches(send) };
}

test('a burst goes as batches: one in flight per node, the rest in the next one', async () => {
  const { calls, sent, batches } = heldNode();
  const answers = Array.from({ length: 5 }, (_, i) => batches.submit('n1', allocation(`o${i}`)));
  const other = batches.submit('n2', allocation('x'));
  await sent(2);
  expect(calls.map((c) => [c.node, c.ops.length])).toEqual([
    ['n1', 1],
    ['n2', 1],
  ]);

  calls[0]?.answer.open(granted(calls[0].ops));
  await sent(3);
  expect(calls.map((c) => c.ops.map((op) => op.request.owner))).toEqual([
    ['o0'],
    ['x'],
    ['o1', 'o2', 'o3', 'o4'],
  ]);
  calls[2]?.answer.open(granted(calls[2].ops));
  calls[1]?.answer.open(granted(calls[1].ops));
  expect(await Promise.all(answers)).toEqual([0, 1, 2, 3, 4].map((i) => grant(`allocate/o${i}/r`)));
  expect(await other).toEqual(grant('allocate/x/r'));
});

test('at most 100 operations a batch', async () => {
  const { calls, sent, batches } = heldNode();
  const answers = Array.from({ length: 151 }, (_, i) => batches.submit('n', allocation(`o${i}`)));
  for (let i = 0; i < 3; i++) {
    await sent(i + 1);
    calls[i]?.answer.open(granted(calls[i]?.ops ?? []));
  }
  await Promise.all(answers);
  expect(calls.map((c) => c.ops.length)).toEqual([1, 100, 50]);
});

test('each operation gets its own answer: a refusal fails that one only', async () => {
  const { calls, sent, batches } = heldNode();
  const first = batches.submit('n', allocation('a'));
  const refused = batches.submit('n', allocation('b')).catch((err: unknown) => err);
  const second = batches.submit('n', allocation('c'));
  await sent(1);
  calls[0]?.answer.open(granted(calls[0].ops));
  await sent(2);
  const failure = { message: 'lease b was released', type: FailureType.released, nonRetryable: true };
  calls[1]?.answer.open([{ id: 'allocate/b/r', failure }, ...granted([allocation('c')])]);
  expect(await first).toEqual(grant('allocate/a/r'));
  expect(await second).toEqual(grant('allocate/c/r'));
  expect(await refused).toBeInstanceOf(OperationFailed);
  expect(((await refused) as OperationFailed).failure).toEqual(failure);
});

test('a failed call fails its batch; the next batch still goes', async () => {
  const { calls, sent, batches } = heldNode();
  const lost = batches.submit('n', allocation('a')).catch((err: unknown) => err);
  const next = batches.submit('n', allocation('b'));
  await sent(1);
  calls[0]?.answer.open(new Error('deadline exceeded'));
  expect(await lost).toEqual(new Error('deadline exceeded'));
  await sent(2);
  calls[1]?.answer.open(granted(calls[1].ops));
  expect(await next).toEqual(grant('allocate/b/r'));
});

test('an operation the node asks to send again (continuing as new) is resent after a pause', async () => {
  const { calls, sent, batches } = heldNode();
  const answer = batches.submit('n', allocation('a'));
  await sent(1);
  const again = { message: 'continuing as new', type: FailureType.nodeContinuing, nonRetryable: false };
  const answeredAt = performance.now();
  calls[0]?.answer.open([{ id: 'allocate/a/r', failure: again }]);
  await sent(2);
  expect(performance.now() - answeredAt).toBeGreaterThanOrEqual(90); // backs off, never a hot loop
  expect(calls[1]?.ops).toEqual([allocation('a')]);
  calls[1]?.answer.open(granted(calls[1].ops));
  expect(await answer).toEqual(grant('allocate/a/r'));
});
