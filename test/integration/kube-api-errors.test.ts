// The API server's refusals reach logs, activity failures and the operator's tools as one line
// naming the code, the reason and the server's message, not the client's dump of the body and
// response headers. Against the real kube-apiserver.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClusterReader } from '../../kubernetes/cluster-reader';
import { connectKube, isNotFound, KubeApiError, kubeApiError, kubeStatusError } from '../../kubernetes/kube';
import { errorMessage } from '../../observability/log';
import { runToEnd, waitFor } from '../../tools/processes';
import { watchForever } from '../../kubernetes/watch-loop';
import { kubeconfigPath, testCluster, type TestCluster } from '../harness/kube';
import { uniqueName } from '../harness/temporal';

let cluster: TestCluster;
beforeAll(async () => (cluster = await testCluster('kube-errors')));
afterAll(async () => cluster?.close());

test('a refused read through the ClusterReader, or a refused watch, is one line with the code and the reason', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'netlease-kubeconfig-'));
  const wrongToken = readFileSync(kubeconfigPath(), 'utf8').replace(/"token": "[^"]*"/, '"token": "wrong"');
  writeFileSync(join(dir, 'kubeconfig'), wrongToken);
  const clients = await connectKube(join(dir, 'kubeconfig'));
  const reader = new ClusterReader(clients.core);
  const refused = await reader.nodeUid('any').catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(KubeApiError);
  expect((refused as Error).message).toBe('kubernetes 401 Unauthorized');
  await expect(reader.listPods()).rejects.toThrow(/^kubernetes 401 Unauthorized$/);
  // A watch refused the same way reports the same line, and stops quietly.
  const reported: string[] = [];
  const loop = watchForever(
    clients,
    '/api/v1/pods',
    async () => undefined,
    (err) => reported.push(errorMessage(err)),
  );
  expect(await waitFor(() => reported.length > 0, 10_000)).toBe(true);
  loop.stop();
  expect(reported[0]).toBe('kubernetes 401 Unauthorized');
  // A missing object is still "absent", not an error.
  expect(await new ClusterReader(cluster.clients.core).nodeUid('no-such-node')).toBeUndefined();
});

test('a conflict keeps its code and the server message', async () => {
  await cluster.createPod('twice', 'some-node');
  const conflict = kubeApiError(await cluster.createPod('twice', 'some-node').catch((err: unknown) => err));
  expect(conflict).toMatchObject({ code: 409, reason: 'AlreadyExists' });
  expect((conflict as Error).message).toBe('kubernetes 409 AlreadyExists: pods "twice" already exists');
  expect(isNotFound(conflict)).toBe(false);
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
  expect(kubeApiError(refused)).toBe(refused); // not the API server's answer: left as it is
});

test("a watch's ERROR event (a Status, as for an expired resourceVersion) makes the same line", () => {
  const expired = {
    kind: 'Status',
    code: 410,
    reason: 'Expired',
    message: 'too old resource version: 5 (9)',
  };
  expect(kubeStatusError(expired).message).toBe('kubernetes 410 Expired: too old resource version: 5 (9)');
  expect(kubeStatusError({ code: 500 }).message).toBe('kubernetes 500 Internal Server Error');
});

test("a body that is no Status (a proxy's HTML page) still makes one line", async () => {
  const { ApiException } = await import('@kubernetes/client-node');
  const page = new ApiException(
    502,
    'Unknown API Status Code!',
    '<html>\n  <body>bad gateway</body>\n</html>\n',
    {},
  );
  expect((kubeApiError(page) as Error).message).toBe(
    'kubernetes 502 Bad Gateway: <html> <body>bad gateway</body> </html>',
  );
});

test("demo-pod, the operator's stand-in for kubectl, says why it failed in one line", async () => {
  const name = uniqueName('demo');
  const demo = (verb: string) =>
    runToEnd(process.execPath, [join(__dirname, '..', '..', 'tools', 'demo-pod.js'), verb, name], {
      env: { ...process.env, KUBECONFIG: kubeconfigPath() },
    });
  expect((await demo('create')).exitCode).toBe(0);
  try {
    const again = await demo('create');
    expect(again.exitCode).toBe(1);
    expect(again.stderr).toBe(`demo-pod: kubernetes 409 AlreadyExists: pods "${name}" already exists\n`);
  } finally {
    expect((await demo('delete')).exitCode).toBe(0);
  }
});
