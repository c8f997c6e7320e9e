// A lease history from the soak that the SDK cannot replay, though the code that wrote it is the
// code that replays it: a control worker stopped during a workflow task of the lease, and the
// task's next attempt carried the result of `activateAttachment` and a `confirmAnswer` update that
// came meanwhile. The live worker ran the activity's continuation first (its commands come first
// in history), a replay of the whole history runs the update first (the SDK core sorts updates
// before activity results in one activation). The soak counts such replays apart (histories.ts,
// SDK_UPDATE_ORDER); when an SDK upgrade replays this history, that exception goes.
import { join } from 'node:path';
import { replayFiles } from '../harness/replay';
import { SDK_UPDATE_ORDER } from '../soak/histories';

test('the SDK still orders an update before an activity result on replay after a timed-out task', async () => {
  const dir = join(__dirname, '..', '..', '..', 'test', 'fixtures');
  const { replayed, errors } = await replayFiles(dir, ['update-after-timed-out-task.history.json']);
  expect(replayed).toBe(1);
  expect(errors).toHaveLength(1);
  expect(errors[0]).toMatch(SDK_UPDATE_ORDER);
});
