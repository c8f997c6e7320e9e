// Bad input through the real executable: the spec's error code, and no lease or allocation left.
import { randomUUID } from 'node:crypto';
import { expectNoLease } from '../harness/leftovers';
import { netconf } from '../harness/netconf';
import { cniArgs, runShim, type ShimCall } from '../harness/shim';
import { callApi } from '../fuzz/targets';
import { expectReplayed } from '../harness/replay';
import { cniPaths, uniqueName, withControlWorker } from '../harness/temporal';
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

const withConf = (extra: Record<string, unknown>): Partial<ShimCall> => ({
  stdin: { ...netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node }), ...extra },
});

/** The file's Temporal settings with `change` made (found by fuzzing, issue 18). */
const withTemporal = (change: Record<string, unknown>): Partial<ShimCall> => {
  const conf = netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node });
  return { stdin: { ...conf, temporal: { ...(conf.temporal as object), ...change }, timeoutSeconds: 5 } };
};

/** Each of these once reached Temporal and came back as "try again later" (11), or succeeded. */
const hostile: Array<[string, (uid: string) => Partial<ShimCall>, number, RegExp]> = [
  ['a 5 MB pool', () => withConf({ pool: 'p'.repeat(5 * 1024 * 1024) }), 7, /configuration: pool: /],
  ['a 100,000-character CNI_CONTAINERID', () => ({ containerId: 'c'.repeat(100_000) }), 4, /CNI_CONTAINERID/],
  ['a CNI_IFNAME of 9 characters, 18 bytes', () => ({ ifName: 'é'.repeat(9) }), 4, /CNI_IFNAME/],
  [
    'an over-long K8S_POD_NAME',
    (uid) => ({ args: { K8S_POD_NAMESPACE: 'bad', K8S_POD_NAME: 'p'.repeat(254), K8S_POD_UID: uid } }),
    4,
    /K8S_POD_NAME /,
  ],
  [
    'an over-long K8S_POD_NAMESPACE',
    (uid) => ({ args: { K8S_POD_NAMESPACE: 'n'.repeat(64), K8S_POD_NAME: 'p', K8S_POD_UID: uid } }),
    4,
    /K8S_POD_NAMESPACE /,
  ],
];

const cases: Array<[string, (uid: string) => Partial<ShimCall>, number, RegExp]> = [
  ...hostile,
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
  [
    'a Temporal namespace with a control character (it travels in a gRPC header)',
    () => withTemporal({ namespace: 'a\u0001b' }),
    7,
    /temporal\.namespace: visible ASCII/,
  ],
  // A lease started there would wait for a worker until the call's deadline, then stay, answered 11.
  [
    'a task queue the pool is not served on',
    () => withTemporal({ taskQueue: 'nobody-polls-this' }),
    7,
    /^pool-on-other-task-queue: temporal\.taskQueue: pool "tq-bad-input-[0-9a-f]+" is served on task queue "tq-bad-input-[0-9a-f]+", not "nobody-polls-this"$/,
  ],
  [
    'a Temporal address with no port',
    () => withTemporal({ address: '127.0.0.1' }),
    7,
    /^invalid-config: invalid network configuration: temporal\.address: must be host:port$/,
  ],
  [
    'a call budget no Temporal call fits in',
    () => withConf({ timeoutSeconds: 1e-9 }),
    7,
    /^invalid-config: invalid network configuration: timeoutSeconds: /,
  ],
  [
    'an unknown Temporal namespace',
    () => withTemporal({ namespace: 'nope' }),
    7,
    /^unknown-temporal-namespace: temporal\.namespace: unknown namespace "nope"$/,
  ],
];

test.each(cases)('%s', async (_name, makeOverrides, code, message) => {
  const uid = randomUUID();
  const overrides = makeOverrides(uid);
  const outcome = await runShim(addCall(uid, overrides));
  expect(outcome.exitCode).toBe(1);
  expect(outcome.json).toMatchObject({ code, msg: expect.stringMatching(message) });
  await expectNoLease(ctx.temporal, node, uid, overrides.ifName);
});

// With Temporal unreachable, only a decision made before connecting can give these codes.
test.each(hostile)('%s is refused before any call to Temporal', async (_name, makeOverrides, code) => {
  const uid = randomUUID();
  const call = addCall(uid, makeOverrides(uid));
  const dead = { temporal: { address: `127.0.0.1:${await freePort()}` }, timeoutSeconds: 2 };
  const outcome = await runShim({ ...call, stdin: { ...(call.stdin as object), ...dead } });
  expect(outcome.json).toMatchObject({ code });
});

// Found by fuzzing (issue 18): STATUS (ptp: it asks who polls the node's task queue) answered an
// unknown namespace "not available" (50), as if Temporal were away.
test('STATUS naming an unknown Temporal namespace is 7 naming it, not 50', async () => {
  const { stdin } = withTemporal({ namespace: 'nope' });
  const outcome = await runShim({ command: 'STATUS', stdin: { ...(stdin as object), mode: 'ptp' } });
  expect(outcome.json).toMatchObject({
    code: 7,
    msg: 'unknown-temporal-namespace: temporal.namespace: unknown namespace "nope"',
  });
});

// Found by fuzzing (issue 18): CHECK read prevResult.ips without looking at its shape, and
// answered a string or a null entry with error 999 (a TypeError).
test('CHECK with a prevResult of another shape is 7 naming it', async () => {
  const call = addCall(randomUUID());
  expect((await runShim(call)).exitCode).toBe(0);
  for (const prevResult of [{ ips: 'x' }, { ips: [null] }, 5]) {
    const outcome = await runShim({
      ...call,
      command: 'CHECK',
      stdin: { ...(call.stdin as object), prevResult },
    });
    expect(outcome.json).toMatchObject({
      code: 7,
      msg: expect.stringMatching(/^invalid-config: invalid network configuration: prevResult/),
    });
  }
  expect((await runShim({ ...call, command: 'DEL' })).exitCode).toBe(0);
});

// Found by fuzzing (issue 18): a lone surrogate (a \uD800 escape; the shim passes bytes) or a NUL
// (a variable is a C string) in CNI_IFNAME was taken, and became another name in Temporal.
test.each([
  ['a lone surrogate', 'e\ud800'],
  ['a NUL', 'e\u0000'],
])("the agent's API refuses %s, which the shim cannot send, and starts nothing", async (_what, ifName) => {
  const uid = randomUUID();
  const call = addCall(uid, { ifName });
  const env = {
    CNI_COMMAND: 'ADD',
    CNI_CONTAINERID: call.containerId,
    CNI_NETNS: call.netns,
    CNI_IFNAME: ifName,
  };
  const body = JSON.stringify({
    env: { ...env, CNI_ARGS: cniArgs(call.args ?? {}) },
    stdin: JSON.stringify(call.stdin),
  });
  const answer = await callApi(cniPaths(ctx.temporal.taskQueue).socket, {
    method: 'POST',
    path: '/cni',
    body,
  });
  expect({ status: answer.status, body: answer.body }).toEqual({
    status: 400,
    body: expect.stringContaining('CNI_IFNAME'),
  });
  for (const seen of [ifName, 'e\ufffd', 'e']) await expectNoLease(ctx.temporal, node, uid, seen);
});

test('a 5 MB pool is refused at once', async () => {
  const uid = randomUUID();
  const started = Date.now();
  const outcome = await runShim(
    addCall(uid, withConf({ pool: 'p'.repeat(5 * 1024 * 1024), timeoutSeconds: 30 })),
  );
  // well under the call's 30 s budget, which a call to Temporal would have spent
  expect(Date.now() - started).toBeLessThan(10_000);
  expect(outcome.json).toMatchObject({ code: 7, msg: expect.stringMatching(/pool: /) });
  await expectNoLease(ctx.temporal, node, uid);
});

test('the longest valid names and ids are accepted', async () => {
  const uid = randomUUID().padEnd(128, 'u');
  const longNode = 'n'.repeat(253);
  const call = addCall(uid, {
    containerId: `c${'-'.repeat(255)}`,
    ifName: 'é'.repeat(7),
    netns: `/${'n'.repeat(4094)}`,
    args: { K8S_POD_NAMESPACE: 'n'.repeat(63), K8S_POD_NAME: 'p'.repeat(253), K8S_POD_UID: uid },
    stdin: netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: longNode }),
  });
  const added = await runShim(call);
  expect(added.json).toMatchObject({ cniVersion: '1.1.0', ips: expect.any(Array) });
  const deleted = await runShim({ ...call, command: 'DEL' });
  expect({ code: deleted.exitCode, out: deleted.stdout }).toEqual({ code: 0, out: '' });
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
  // The shim's own refusal: its reason too, no Event (the agent never saw the call).
  expect(old.json).toMatchObject({ code: 1, msg: 'incompatible-version: incompatible CNI version "0.3.0"' });
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(ctx.temporal, 2);
});
