// Every refusal has a stable reason (cni/refusals): each lease FailureType maps to one with its CNI
// code, the agent's own refusals carry theirs, the CNI error's msg starts with it, and
// docs/operating.md lists each with its codes (and the reserved ones as reserved).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { FailureType } from '../../domain/lease';
import { CniCode, CniError } from '../../cni/errors';
import { eventReason, failureRefusal, REASONS, RESERVED_REASONS, type Reason } from '../../cni/refusals';
import { toCniError } from '../../cni/temporal';
import { decodeCall, handleCniCall, wireAnswer } from '../../cni/handle';

const ADDRESS = '127.0.0.1:7233';
const leaseFailure = (type: string) =>
  new WorkflowUpdateFailedError('update failed', ApplicationFailure.nonRetryable(`refused: ${type}`, type));
const codesOf = (reason: Reason): readonly number[] => REASONS[reason];

describe('lease failures', () => {
  test.each(Object.values(FailureType))('%s has a reason, and the CNI error carries it', (type) => {
    const refusal = failureRefusal(type);
    expect(refusal).toBeDefined();
    const error = toCniError(leaseFailure(type), ADDRESS);
    expect({ code: error.code, reason: error.reason }).toEqual(refusal);
    expect(codesOf(error.reason)).toContain(error.code);
    expect(error.toJSON('1.1.0')).toMatchObject({
      code: error.code,
      msg: `${error.reason}: refused: ${type}`,
    });
  });

  test('the codes lease failures had before reasons are kept (a request error is never 11)', () => {
    const code = (type: string) => toCniError(leaseFailure(type), ADDRESS).code;
    expect(code(FailureType.exhausted)).toBe(CniCode.poolExhausted);
    expect(code(FailureType.conflict)).toBe(CniCode.addressConflict);
    expect(code(FailureType.invalidConfig)).toBe(CniCode.invalidNetworkConfig);
    expect(code(FailureType.termsMismatch)).toBe(CniCode.invalidNetworkConfig);
    expect(code(FailureType.unsupported)).toBe(CniCode.unsupportedField);
    for (const type of [FailureType.nodeUnknown, FailureType.released, FailureType.incarnationGone])
      expect(code(type)).toBe(CniCode.tryAgainLater);
  });

  test('a failure of no known type is the request refused (7), never 11', () => {
    const error = toCniError(leaseFailure('SomethingElse'), ADDRESS);
    expect({ code: error.code, reason: error.reason }).toEqual({ code: 7, reason: 'request-rejected' });
    expect(failureRefusal('toString')).toBeUndefined(); // not an inherited property
  });
});

test("the agent's own refusals: Temporal away, invalid arguments, the request's mistakes", async () => {
  const grpc = (code: number) => Object.assign(new Error(`${code} x`), { code, details: 'x', metadata: {} });
  expect(toCniError(grpc(14), ADDRESS).reason).toBe('temporal-unreachable');
  expect(toCniError(grpc(3), ADDRESS)).toMatchObject({ code: 7, reason: 'request-rejected' });
  const env = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c', CNI_NETNS: '/n', CNI_IFNAME: 'eth0' };
  const clients = () => Promise.reject(new Error('no Temporal in this test'));
  const answer = async (callEnv: Record<string, string>, stdin: string) =>
    JSON.parse(wireAnswer(await handleCniCall(decodeCall({ env: callEnv, stdin }), { clients })).stdout) as {
      code: number;
      msg: string;
    };
  expect(await answer(env, 'not json')).toMatchObject({ code: 6, msg: /^bad-request: failed to decode/ });
  expect(await answer({ ...env, CNI_IFNAME: 'a/b' }, '{}')).toMatchObject({ code: 4, msg: /^bad-request: / });
  expect(await answer(env, '{"cniVersion":"9.9.9","name":"n","type":"netlease"}')).toMatchObject({
    code: 1,
    msg: /^incompatible-version: /,
  });
  expect(await answer(env, '{"cniVersion":"1.1.0","name":"n"}')).toMatchObject({
    code: 7,
    msg: /^invalid-config: invalid network configuration/,
  });
});

test('each reason lists the codes it comes with; a code with one meaning names its reason', () => {
  for (const [reason, codes] of Object.entries(REASONS)) {
    expect(reason).toMatch(/^[a-z]+(-[a-z]+)*$/);
    expect(codes.length).toBeGreaterThan(0);
  }
  for (const code of [1, 2, 3, 4, 6, 7, 100, 101, 102] as const)
    expect(codesOf(new CniError(code, 'm').reason)).toContain(code);
  expect(RESERVED_REASONS.filter((r) => r in REASONS)).toEqual([]);
});

test('the Event reason is the reason in UpperCamelCase', () => {
  expect(eventReason('pool-exhausted')).toBe('PoolExhausted');
  expect(eventReason('tls-file-unreadable')).toBe('TlsFileUnreadable');
});

test('docs/operating.md lists every reason with its CNI codes, and the reserved ones', () => {
  const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'operating.md'), 'utf8');
  const rows = new Map(
    [...doc.matchAll(/^\| `([a-z-]+)`\s*\| ([^|]+)\|/gm)].map((m) => [m[1], (m[2] ?? '').trim()]),
  );
  for (const [reason, codes] of Object.entries(REASONS))
    expect([reason, rows.get(reason)]).toEqual([reason, codes.join(', ')]);
  for (const reason of RESERVED_REASONS) expect([reason, rows.get(reason)]).toEqual([reason, 'reserved']);
});

test("the Go shim's own refusals carry reasons of the table, with their codes", () => {
  const shim = readFileSync(join(__dirname, '..', '..', '..', 'cni', 'shim', 'main.go'), 'utf8');
  const calls = [...shim.matchAll(/\bfail\(out, [^,]+, (\d+), "([a-z-]+)",/g)];
  expect(calls.length).toBeGreaterThanOrEqual(10);
  for (const [, code, reason] of calls)
    expect([reason, code, codesOf(reason as Reason)?.includes(Number(code))]).toEqual([reason, code, true]);
  // Every fail call passes a reason (a new one without would not match above).
  expect(shim.match(/\bfail\(out, /g)?.length).toBe(calls.length);
});
