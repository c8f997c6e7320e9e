// `npm run bench`: figures for the CNI ADD path against a real dev server. Prints, asserts nothing.
//   shim start-up (VERSION, no Temporal), sequential ADD latency, ADD throughput at N in flight,
//   the control worker's resident memory, and the ptp ADD/DEL path with a real node agent.
import { randomUUID } from 'node:crypto';
import { NetleaseConfigSchema } from '../../domain/config';
import { freePort } from '../../tools/processes';
import { startDevServer } from '../../tools/temporal-server';
import { inBatches, runShim } from '../harness/shim';
import { p50p95 } from './figures';
import { benchPtp } from './ptp-path';
import { quietRuntime, runControlWorker } from '../harness/temporal';

async function main(): Promise<void> {
  quietRuntime();
  const server = await startDevServer({ port: await freePort() });
  process.env.NETLEASE_TEST_TEMPORAL = server.address;
  const config = NetleaseConfigSchema.parse({
    temporal: { address: server.address, taskQueue: 'bench' },
    pools: [{ name: 'default', cidrs: ['198.18.0.0/16', 'fd00:18::/64'] }],
  });
  const worker = await runControlWorker(config);
  try {
    const add = (node: string) => {
      const uid = randomUUID();
      const started = Date.now();
      return runShim({
        command: 'ADD',
        containerId: `c-${uid}`,
        netns: '/var/run/netns/bench',
        ifName: 'eth0',
        args: { K8S_POD_UID: uid },
        stdin: {
          cniVersion: '1.1.0',
          name: 'b',
          type: 'netlease',
          nodeName: node,
          temporal: config.temporal,
          timeoutSeconds: 300,
        },
      }).then((o) => {
        if (o.exitCode !== 0) throw new Error(o.stdout);
        return Date.now() - started;
      });
    };
    const startup: number[] = [];
    for (let i = 0; i < 10; i++) {
      const t = Date.now();
      await runShim({ command: 'VERSION', stdin: { cniVersion: '1.1.0' } });
      startup.push(Date.now() - t);
    }
    console.log(`shim start-up (VERSION): ${p50p95(startup)}`);
    await add('warm-up');
    const sequential: number[] = [];
    for (let i = 0; i < 30; i++) sequential.push(await add('bench-seq'));
    console.log(`ADD sequential (30): ${p50p95(sequential)}`);
    for (const inFlight of [5, 25]) {
      const t = Date.now();
      const latencies = await inBatches(
        Array.from({ length: 100 }, (_, i) => () => add(`bench-${inFlight}-${i % 5}`)),
        inFlight,
      );
      const seconds = (Date.now() - t) / 1000;
      console.log(
        `ADD x100 on 5 nodes, ${inFlight} in flight: ${(100 / seconds).toFixed(1)} ADD/s, ${p50p95(latencies)}`,
      );
    }
    await benchPtp(config.temporal);
    console.log(
      `control worker and node agent (this process) RSS: ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`,
    );
  } finally {
    await worker.stop();
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
