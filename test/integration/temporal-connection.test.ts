// A client connection while Temporal is unreachable. Closing it while a call is between retries
// must not end the process: the client's retry timer would create a call on the shut-down channel,
// which throws from the timer ("Channel has been shut down"), an uncaught exception. And it keeps
// trying to reconnect every few seconds: grpc-js's own backoff grows to two minutes, which left
// the soak's control worker unable to release leases for 90 s after a 5-s outage.
import { TemporalConnectionSchema } from '../../domain/config';
import { connectConnection } from '../../temporal/connection';
import { waitFor } from '../../tools/processes';
import { tcpProxy } from '../harness/tcp-proxy';
import { temporalAddress } from '../harness/temporal';

test('a connection closed while a call waits to be retried ends the call, not the process', async () => {
  const proxy = await tcpProxy(temporalAddress());
  try {
    const connection = await connectConnection(TemporalConnectionSchema.parse({ address: proxy.address }));
    await connection.workflowService.getSystemInfo({}); // connected
    proxy.refuse();
    const call = connection
      .withDeadline(Date.now() + 20_000, () => connection.workflowService.getSystemInfo({}))
      .then(
        () => 'answered',
        (err: unknown) => `failed: ${(err as Error).message}`,
      );
    // The channel tried to reconnect and was refused: the call has failed once and waits to retry.
    expect(await waitFor(() => proxy.refused > 0, 10_000)).toBe(true);
    // Unfixed, the pending retry throws from its timer after this close (the test process fails
    // with an uncaught exception) and the call never settles.
    await connection.close();
    expect(await call).toMatch(/^failed: /);
  } finally {
    await proxy.close();
  }
}, 30_000);

test('while Temporal is unreachable, the connection tries again at least every 6 s', async () => {
  const proxy = await tcpProxy(temporalAddress());
  try {
    const connection = await connectConnection(TemporalConnectionSchema.parse({ address: proxy.address }));
    await connection.workflowService.getSystemInfo({}); // connected
    proxy.refuse();
    const outageEnds = Date.now() + 30_000;
    // Calls keep coming, as a worker's do; each fails at its deadline while the proxy refuses.
    while (Date.now() < outageEnds)
      await connection
        .withDeadline(Math.min(outageEnds, Date.now() + 3000), () =>
          connection.workflowService.getSystemInfo({}),
        )
        .catch(() => undefined);
    const gaps = proxy.refusedAt.slice(1).map((at, i) => at - (proxy.refusedAt[i] ?? at));
    expect(proxy.refused).toBeGreaterThanOrEqual(5); // it did try, over 30 s
    // The default grows 1, 1.6, 2.6, 4.1, 6.6, 10.5, 16.8 s (±20%): gaps of 10 s and more by now.
    expect(Math.max(...gaps)).toBeLessThan(6500);
    await proxy.restore();
    await connection.workflowService.getSystemInfo({}); // back
    await connection.close();
  } finally {
    await proxy.close();
  }
}, 60_000);
