// A CNI call's answer is structured (exit code, result or CniError) and becomes the shim's
// {exitCode, stdout} in one place, wireAnswer; the stdin is decoded once per call.
import type { CniContext } from '../../cni/commands';
import { SUPPORTED_VERSIONS } from '../../cni/netconf';
import { decodeCall, handleCniCall, wireAnswer, type CniCall } from '../../cni/handle';
import { TlsFileError } from '../../temporal/connection';

/** The paths below never reach Temporal: a client asked for is a failure of the test. */
const context: CniContext = {
  clients: () => {
    throw new Error('no Temporal in this test');
  },
};
const add = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c', CNI_NETNS: '/n', CNI_IFNAME: 'eth0' };
const call = async (c: CniCall) => handleCniCall(decodeCall(c), context);

test('a result is one JSON line on stdout, exit 0', async () => {
  const answer = await call({ env: { CNI_COMMAND: 'VERSION' }, stdin: '{"cniVersion":"0.4.0"}' });
  expect(answer).toEqual({
    exitCode: 0,
    result: { cniVersion: '0.4.0', supportedVersions: [...SUPPORTED_VERSIONS] },
  });
  expect(wireAnswer(answer)).toEqual({
    exitCode: 0,
    stdout: `{"cniVersion":"0.4.0","supportedVersions":${JSON.stringify(SUPPORTED_VERSIONS)}}\n`,
  });
  expect(wireAnswer({ exitCode: 0 })).toEqual({ exitCode: 0, stdout: '' });
});

test('an error keeps its code, message and details, in the version the call asked for', async () => {
  const answer = await call({ env: add, stdin: '{"cniVersion":"0.4.0","name":"n"}' });
  if (answer.exitCode !== 1) throw new Error(`expected an error, got ${JSON.stringify(answer)}`);
  expect(answer.error.code).toBe(7);
  expect(answer.cniVersion).toBe('0.4.0');
  expect(wireAnswer(answer)).toEqual({
    exitCode: 1,
    stdout: `${JSON.stringify({ cniVersion: '0.4.0', code: 7, msg: `invalid-config: ${answer.error.message}` })}\n`,
  });
});

test('stdin that is not JSON is error 6 in version 1.1.0; VERSION with no stdin asks for 1.1.0', async () => {
  const answer = await call({ env: add, stdin: 'not json' });
  const wire = wireAnswer(answer);
  expect(wire.exitCode).toBe(1);
  expect(JSON.parse(wire.stdout)).toEqual({
    cniVersion: '1.1.0',
    code: 6,
    msg: 'bad-request: failed to decode network configuration',
    details: expect.stringContaining('JSON'),
  });
  expect(await call({ env: { CNI_COMMAND: 'VERSION' }, stdin: '' })).toEqual({
    exitCode: 0,
    result: { cniVersion: '1.1.0', supportedVersions: [...SUPPORTED_VERSIONS] },
  });
});

// Found by fuzzing (issue 18): the shim reads an empty cniVersion as 1.1.0 and answered VERSION,
// the agent echoed "" in its errors and refused VERSION with error 1.
test('an empty cniVersion is 1.1.0, as the shim reads it', async () => {
  const stdin = '{"cniVersion":"","name":"n","type":"netlease"}';
  expect(wireAnswer(await call({ env: add, stdin }))).toMatchObject({
    exitCode: 1,
    stdout: expect.stringMatching(/^\{"cniVersion":"1\.1\.0","code":1,/),
  });
  expect(await call({ env: { CNI_COMMAND: 'VERSION' }, stdin })).toEqual({
    exitCode: 0,
    result: { cniVersion: '1.1.0', supportedVersions: [...SUPPORTED_VERSIONS] },
  });
});

// Found by fuzzing (issue 18): STATUS answered every failure "not available" (50), a TLS file
// that cannot be read too; that is a mistake in the configuration, with its own code and field.
test('STATUS: a configuration Temporal cannot be reached with keeps its code; Temporal away is 50', async () => {
  const conf = { cniVersion: '1.1.0', name: 'n', type: 'netlease', temporal: { tls: {} }, timeoutSeconds: 1 };
  const failing = (err: Error): CniContext => ({ clients: () => Promise.reject(err) });
  const status = (context: CniContext) =>
    handleCniCall(decodeCall({ env: { CNI_COMMAND: 'STATUS' }, stdin: JSON.stringify(conf) }), context);
  const unreadable = new TlsFileError('clientCertFile', '/nonexistent.pem', 'ENOENT');
  expect(wireAnswer(await status(failing(unreadable)))).toMatchObject({
    exitCode: 1,
    stdout: expect.stringContaining(
      '"code":5,"msg":"tls-file-unreadable: cannot read temporal.tls.clientCertFile',
    ),
  });
  expect(wireAnswer(await status(failing(new Error('connection refused'))))).toMatchObject({
    stdout: expect.stringContaining(
      '"code":50,"msg":"temporal-unreachable: netlease is not available: Temporal does not answer"',
    ),
  });
});

test('the stdin is decoded once per call', async () => {
  const parse = jest.spyOn(JSON, 'parse');
  try {
    const answer = await call({ env: add, stdin: '{"cniVersion":"1.1.0","name":"n","type":"netlease"}' });
    expect(answer.exitCode).toBe(1);
    expect(parse).toHaveBeenCalledTimes(1);
  } finally {
    parse.mockRestore();
  }
});
