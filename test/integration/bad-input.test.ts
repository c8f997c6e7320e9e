// Bad input through the real executable: the spec's error code, and no lease or allocation left.
import { randomUUID } from 'node:crypto';
import { expectNoLease } from '../harness/leftovers';
import { netconf } from '../harness/netconf';
import { runShim, type ShimCall } from '../harness/shim';
import { uniqueName, withControlWorker } from '../harness/temporal';
import { freePort } from '../../tools/processes';

const node = uniqueName('node');
const ctx = withControlWorker('bad-input');

function addCall(uid: string, overrides: Partial<ShimCall> = {}): ShimCall {
  return {
    command: 'ADD',
    containerId: `ctr-${uid}`,
    netns: `/var/run/netns/${uid}`,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: 'bad', K8S_POD_NAME: 'p', K8S_POD_UID: uid },
    stdin: netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node }),
    ...overrides,
  };
}

const cases: Array<[string, (uid: string) => Partial<ShimCall>, number, RegExp]> = [
  ['malformed stdin', () => ({ stdin: '{"cniVersion": "1.1.0", ' }), 6, /failed to decode/],
  ['missing CNI_COMMAND', () => ({ command: '' }), 4, /CNI_COMMAND/],
  ['missing CNI_CONTAINERID', () => ({ containerId: undefined }), 4, /CNI_CONTAINERID/],
  ['missing CNI_NETNS', () => ({ netns: undefined }), 4, /CNI_NETNS/],
  ['malformed CNI_ARGS', () => ({ env: { CNI_ARGS: 'K8S_POD_UID' } }), 4, /CNI_ARGS/],
  [
    'unknown cniVersion',
    () => ({ stdin: netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node, cniVersion: '2.0.0' }) }),
    1,
    /incompatible CNI version "2\.0\.0"/,
  ],
  [
    'invalid route CIDR',
    () => ({
      stdin: netconf({
        taskQueue: ctx.temporal.taskQueue,
        nodeName: node,
        extra: { routes: [{ dst: '10.0.0.0/40' }] },
      }),
    }),
    7,
    /routes\[0\]\.dst: invalid CIDR "10\.0\.0\.0\/40"/,
  ],
  [
    'missing network name',
    () => ({ stdin: { ...netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node }), name: '' } }),
    7,
    /name: /,
  ],
  [
    'unknown pool',
    () => ({ stdin: netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node, pool: 'nope' }) }),
    7,
    /unknown pool "nope"/,
  ],
];

test.each(cases)('%s', async (_name, overrides, code, message) => {
  const uid = randomUUID();
  const outcome = await runShim(addCall(uid, overrides(uid)));
  expect(outcome.exitCode).toBe(1);
  expect(outcome.json).toMatchObject({ code, msg: expect.stringMatching(message) });
  await expectNoLease(ctx.temporal, node, uid);
});

test('Temporal unreachable: try again later (11)', async () => {
  const uid = randomUUID();
  const dead = `127.0.0.1:${await freePort()}`;
  const stdin = {
    ...netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node }),
    temporal: { address: dead },
    timeoutSeconds: 2,
  };
  const outcome = await runShim(addCall(uid, { stdin }));
  expect(outcome.json).toMatchObject({ code: 11, msg: expect.stringContaining(dead) });
  await expectNoLease(ctx.temporal, node, uid);
});

test('VERSION lists the supported versions; an unsupported one is error 1', async () => {
  const outcome = await runShim({ command: 'VERSION', stdin: { cniVersion: '1.0.0' } });
  expect(outcome.json).toEqual({
    cniVersion: '1.0.0',
    supportedVersions: ['0.3.1', '0.4.0', '1.0.0', '1.1.0'],
  });
  const old = await runShim({ command: 'VERSION', stdin: { cniVersion: '0.3.0' } });
  expect(old.json).toMatchObject({ code: 1, msg: 'incompatible CNI version "0.3.0"' });
});
