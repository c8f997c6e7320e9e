// A connection while Temporal is unreachable, for both kinds a process uses: a client's
// Connection (grpc-js: netleasectl, npm start) and a Worker's NativeConnection, on which the
// control worker and the node agent also make every call of theirs. Closing it while a call is
// between retries must not end the process: grpc-js's retry timer would create a call on the
// shut-down channel, which throws from the timer ("Channel has been shut down"), an uncaught
// exception. And it keeps trying to reconnect every few seconds: grpc-js's own backoff grows to
// two minutes, which left the soak's control worker unable to release leases for 90 s after a
// 5-s outage.
import type { ConnectionLike } from '@temporalio/client';
import { TemporalConnectionSchema } from '../../domain/config';
import { poolWorkflowId } from '../../domain/ids';
import {
  clientOn,
  connectConnection,
  connectWorkerConnection,
  connectWorkerConnectionWhenReachable,
  isUnreachable,
  whenReachable,
} from '../../temporal/connection';
import { openPoolWorkflows } from '../../temporal/pools';
import { waitFor } from '../../tools/processes';
import { tcpProxy, type TcpProxy } from '../harness/tcp-proxy';
import { connectTest, quietRuntime, temporalAddress, testConfig } from '../harness/temporal';

type Connect = (address: string) => Promise<ConnectionLike>;
const kinds: Array<[string, Connect]> = [
  ["a client's Connection", (address) => connectConnection(TemporalConnectionSchema.parse({ address }))],
  [
    "a Worker's NativeConnection",
    (address) => {
      quietRuntime();
      return connectWorkerConnection(TemporalConnectionSchema.parse({ address }));
    },
  ],
];

/** `connect`'s connection through a proxy, connected, then refused: Temporal went away. */
async function cutOff(
  connect: Connect,
  during: (connection: ConnectionLike, proxy: TcpProxy) => Promise<void>,
) {
  const proxy = await tcpProxy(temporalAddress());
  try {
    const connection = await connect(proxy.address);
    await connection.workflowService.getSystemInfo({}); // connected
    proxy.refuse();
    await during(connection, proxy);
  } finally {
    await proxy.close();
  }
}

test.each(kinds)(
  '%s closed while a call waits to be retried ends the call, not the process',
  (_, connect) =>
    cutOff(connect, async (connection, proxy) => {
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
    }),
  30_000,
);

test.each(kinds)(
  '%s tries again at least every 6 s while Temporal is unreachable',
  (_, connect) =>
    cutOff(connect, async (connection, proxy) => {
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
    }),
  60_000,
);

test("a Worker's connection made while Temporal is unreachable waits for it; a TLS problem is thrown at once", async () => {
  quietRuntime();
  const proxy = await tcpProxy(temporalAddress());
  try {
    await proxy.cut(); // nothing listens: Temporal is restarting
    const told: number[] = [];
    const settings = TemporalConnectionSchema.parse({ address: proxy.address });
    const connecting = connectWorkerConnectionWhenReachable(settings, (_, retryInMs) => told.push(retryInMs));
    expect(await waitFor(() => told.length >= 2, 15_000)).toBe(true);
    expect(told.slice(0, 2)).toEqual([1000, 2000]);
    await proxy.restore();
    const connection = await connecting;
    await connection.workflowService.getSystemInfo({}); // connected once it came back
    await connection.close();

    const missing = TemporalConnectionSchema.parse({
      address: proxy.address,
      tls: { serverRootCACertificateFile: '/nonexistent/ca.pem' },
    });
    const toldBefore = told.length;
    await expect(connectWorkerConnectionWhenReachable(missing, (_, ms) => told.push(ms))).rejects.toThrow(
      /ca\.pem/,
    );
    expect(told.length).toBe(toldBefore);
  } finally {
    await proxy.close();
  }
}, 60_000);

test("a control worker's start-up step that meets Temporal going away waits for it (opening its pools)", async () => {
  quietRuntime();
  const proxy = await tcpProxy(temporalAddress());
  const test = await connectTest('reach');
  const { taskQueue } = test;
  const config = testConfig(taskQueue, { temporal: { address: proxy.address, taskQueue } });
  const connection = await connectWorkerConnection(config.temporal);
  try {
    const client = clientOn(connection, config.temporal);
    await connection.workflowService.getSystemInfo({}); // connected, as after the worker's connect
    proxy.refuse(); // then Temporal restarts (the soak's seed 795915740: the control worker exited)
    const bare = await openPoolWorkflows(client, config).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(bare).toBeInstanceOf(Error); // unwrapped, the step fails: the process exited on it
    expect(isUnreachable(bare)).toBe(true);

    const told: string[] = [];
    const opening = whenReachable(
      () => openPoolWorkflows(client, config),
      (err) => told.push((err as Error).message),
    );
    expect(await waitFor(() => told.length >= 1, 60_000)).toBe(true);
    await proxy.restore();
    await opening;
    const pool = await test.client.workflow.getHandle(poolWorkflowId(taskQueue)).describe();
    expect(pool.status.name).toBe('RUNNING');
    await test.client.workflow.getHandle(poolWorkflowId(taskQueue)).terminate('test done');

    // What the server says is not waited on: a refusal is thrown at once.
    const before = told.length;
    const refused = whenReachable(
      () => test.client.workflow.getHandle(`no-such-${taskQueue}`).describe(),
      (err) => told.push((err as Error).message),
    );
    await expect(refused).rejects.toThrow(/not found/i);
    expect(told.length).toBe(before);
  } finally {
    await connection.close();
    await test.close();
    await proxy.close();
  }
}, 120_000);
