// Histories recorded by the code as it was before each change of a workflow (one directory per
// version, test/fixtures/histories/<label>/, written by `npm run record-histories`) replay against
// the current workflow bundle: a change of a workflow's commands without patched() fails here,
// not in a cluster whose open runs the old code started. No server: the replayer runs in-process.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { WORKFLOW_TYPES } from '../fixtures/recording';
import { replayFiles } from '../harness/replay';

const dir = join(__dirname, '..', '..', '..', 'test', 'fixtures', 'histories');
const files = readdirSync(dir, { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.json'))
  .sort();
const labels = readdirSync(dir, { withFileTypes: true }).filter((entry) => entry.isDirectory());

test.each(labels.map((label) => label.name))('version %s holds histories of every workflow type', (label) => {
  const types = new Set(readdirSync(join(dir, label)).map((file) => file.split('-')[0]));
  expect([...types].sort()).toEqual([...WORKFLOW_TYPES].sort());
});

test('every recorded history replays against the current workflows', async () => {
  expect(files.length).toBeGreaterThan(0);
  const { replayed, errors } = await replayFiles(dir, files);
  expect(errors).toEqual([]);
  expect(replayed).toBe(files.length);
});
