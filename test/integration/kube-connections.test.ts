// Connections to the kube-apiserver: quorum reads reuse one TLS connection (the client alone
// makes a new HTTPS agent per request, and a produce, one Node read each, paid a handshake every
// time), and a read or a list page on a connection gone silent fails within its bound, naming
// what it was, instead of holding its caller forever; the next call, once the server answers
// again, succeeds.
import { Agent } from 'node:https';
import { performance } from 'node:perf_hooks';
import { DEFAULT_KUBE_TIMEOUTS } from '../../domain/config';
import { connectKube } from '../../kubernetes/kube';
import { ClusterReader } from '../../kubernetes/cluster-reader';
import { apiServerAddress, kubeconfigPath, kubeconfigThrough } from '../harness/kube';
import { tcpProxy } from '../harness/tcp-proxy';

test('ten sequential node reads open no connection after the first', async () => {
  const clients = await connectKube(kubeconfigPath());
  const reader = new ClusterReader(clients.core);
  const connects = jest.spyOn(Agent.prototype, 'createConnection');
  await reader.nodeUid('no-such-node-warm-up');
  expect(connects).toHaveBeenCalledTimes(1);
  for (let i = 0; i < 10; i++) expect(await reader.nodeUid(`no-such-node-${i}`)).toBeUndefined();
  expect(connects).toHaveBeenCalledTimes(1);
  connects.mockRestore();
});

/** How long `call` took to settle, and its error (undefined when it succeeded). */
async function timed(call: () => Promise<unknown>, deadlineMs: number) {
  const began = performance.now();
  // The test's own deadline: a call that never settles fails the test here, not by jest's timeout.
  const deadline = new Promise((resolve) => setTimeout(() => resolve('never settled'), deadlineMs));
  const outcome = await Promise.race([
    call().then(
      () => undefined,
      (err: unknown) => err,
    ),
    deadline,
  ]);
  return { ms: performance.now() - began, outcome };
}

test('a read or a list page that gets no answer fails within its bound; the next call succeeds', async () => {
  const proxy = await tcpProxy(apiServerAddress());
  try {
    const timeouts = { ...DEFAULT_KUBE_TIMEOUTS, callSeconds: 1, listPageSeconds: 2 };
    const clients = await connectKube(kubeconfigThrough(proxy.address), timeouts);
    const reader = new ClusterReader(clients.core, clients.timeouts);
    expect(await reader.nodeUid('no-such-node')).toBeUndefined(); // answered while the proxy forwards
    proxy.stall(); // accepts, never answers: the keep-alive connection and any new one
    const read = await timed(() => reader.readPod('default', 'any'), 10_000);
    expect(read.outcome).toBeInstanceOf(Error);
    expect((read.outcome as Error).message).toBe('reading pod default/any: no answer in 1000 ms');
    expect(read.ms).toBeLessThan(1000 * 2);
    const list = await timed(() => reader.listPods(), 10_000);
    expect((list.outcome as Error).message).toBe('listing pods, page 1: no answer in 2000 ms');
    expect(list.ms).toBeLessThan(2000 * 2);
    await proxy.restore();
    expect(await reader.nodeUid('no-such-node')).toBeUndefined();
    await expect(reader.listPods()).resolves.toEqual(expect.any(Array));
  } finally {
    await proxy.close();
  }
});
