// Closing a client connection while a call is between retries (Temporal unreachable) must not end
// the process: the client's retry timer would create a call on the shut-down channel, which
// throws from the timer ("Channel has been shut down"), an uncaught exception.
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
