// What a lease run held, read from its events without replaying them: the soak's history that the
// SDK cannot replay (test/unit/sdk-update-order) still says the lease's start and its sandbox.
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { heldInHistory } from '../../temporal/lease-history';
import { historyFromShowJson } from '../harness/replay';

const fixture = join(
  __dirname,
  '..',
  '..',
  '..',
  'test',
  'fixtures',
  'update-after-timed-out-task.history.json',
);
const events = historyFromShowJson(readFileSync(fixture, 'utf8')).events;

test('a history that does not replay: its start, and the sandbox its ADD and the agent claimed', () => {
  // Up to the DEL's acceptance: the ADD (consume) and the agent's confirmAnswer named one sandbox.
  const held = heldInHistory(events.filter((e) => Number(e.eventId) <= 40));
  expect(held?.start).toMatchObject({
    podName: 'pod-50',
    nodeName: 'soak-node-0',
    pool: 'soak',
    mode: 'ptp',
  });
  expect(held?.attachments).toEqual([
    {
      containerId: 'ctr-069a05c4b93a',
      netns: '/var/run/netns/soakp-92bf5ee47b',
      ifName: 'eth0',
      links: {
        host: { name: 'nl556e017d7bf46', mac: '02:f3:c8:c4:f4:3a' },
        container: { name: 'eth0', mac: '02:c2:80:7f:89:33', sandbox: '/var/run/netns/soakp-92bf5ee47b' },
      },
    },
  ]);
});

test('a DEL that answered true removes the sandbox; a history of another workflow holds nothing', () => {
  expect(heldInHistory(events)?.attachments).toEqual([]);
  expect(heldInHistory(events.slice(1))).toBeUndefined();
});
