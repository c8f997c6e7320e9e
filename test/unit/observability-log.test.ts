// The SDK's log lines through our adapter: one short JSON line, an expected retry without a stack.
import { ApplicationFailure } from '@temporalio/common';
import { createLog, describeFailure, sdkLogger } from '../../observability/log';
import { decodeCall } from '../../cni/handle';
import { callFields } from '../../worker/agent/cni-api';

function captured() {
  const lines: string[] = [];
  const log = createLog('test', 'info', { write: (line: string) => void lines.push(line) });
  return { log, lines: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>), raw: lines };
}

test('a failed activity attempt is one line: type, attempt, lease id, cause; no stack, no token', () => {
  const { log, lines, raw } = captured();
  const error = ApplicationFailure.retryable('network namespace /x does not exist (yet)', 'NetnsMissing');
  sdkLogger(log).warn('Activity failed', {
    error,
    durationMs: 1.4,
    attempt: 3,
    activityType: 'activateAttachment',
    workflowId: 'lease/u1/eth0',
    taskToken: 'A'.repeat(200),
    sdkComponent: 'activity',
  });
  expect(raw).toHaveLength(1);
  expect(raw[0]).not.toMatch(/\\n\s+at |taskToken|stack/);
  expect(lines()[0]).toEqual(
    expect.objectContaining({
      level: 'warn',
      msg: 'activity attempt failed',
      attempt: 3,
      activityType: 'activateAttachment',
      leaseId: 'lease/u1/eth0',
      error: 'network namespace /x does not exist (yet)',
      errorType: 'NetnsMissing',
      durationMs: 1,
    }),
  );
});

test('levels below the logger are dropped; by-design SDK warnings are info', () => {
  const { log, lines } = captured();
  const sdk = sdkLogger(log);
  sdk.debug('Activity started', {});
  sdk.warn('No workflows registered, not polling for workflow tasks', {});
  expect(lines().map((l) => [l.level, l.msg])).toEqual([
    ['info', 'No workflows registered, not polling for workflow tasks'],
  ]);
});

test('describeFailure takes the innermost cause, first line only', () => {
  const inner = new Error('the real cause\nwith a second line');
  const outer = new Error('Activity task failed', { cause: inner });
  expect(describeFailure(outer)).toEqual({ error: 'the real cause', errorType: 'Error' });
});

test('callFields names verb, pod, lease and node from the call', () => {
  expect(
    callFields(
      decodeCall({
        env: {
          CNI_COMMAND: 'ADD',
          CNI_CONTAINERID: 'c1',
          CNI_IFNAME: 'eth0',
          CNI_ARGS: 'K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web;K8S_POD_UID=u1',
        },
        stdin: JSON.stringify({ nodeName: 'n1' }),
      }),
    ),
  ).toEqual({
    verb: 'ADD',
    pod: 'ns/web',
    podUid: 'u1',
    leaseId: 'lease/u1/eth0',
    containerId: 'c1',
    node: 'n1',
  });
  expect(callFields(decodeCall({ env: { CNI_COMMAND: 'BOGUS' }, stdin: 'not json' })).verb).toBe('invalid');
});
