// `npm run bench`: figures for the CNI ADD path against a real dev server. Prints, asserts nothing.
//   shim start-up (VERSION, no Temporal), sequential ADD latency, ADD throughput at N in flight,
//   and the control worker's resident memory after the run.
import { randomUUID } from 'node:crypto';
import { NetleaseConfigSchema } from '../../domain/config';
import { freePort } from '../../tools/processes';
import { startDevServer } from '../../tools/temporal-server';
import { inBatches, runShim } from '../harness/shim';
import { quietRuntime, runControlWorker } from '../harness/temporal';

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) * p)] ?? NaN;

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
    console.log(
      `shim start-up (VERSION): p50 ${percentile(startup, 0.5)} ms, p95 ${percentile(startup, 0.95)} ms`,
    );
    await add('warm-up');
    const sequential: number[] = [];
    for (let i = 0; i < 30; i++) sequential.push(await add('bench-seq'));
    console.log(
      `ADD sequential (30): p50 ${percentile(sequential, 0.5)} ms, p95 ${percentile(sequential, 0.95)} ms`,
    );
    for (const inFlight of [5, 25]) {
      const t = Date.now();
      const latencies = await inBatches(
        Array.from({ length: 100 }, (_, i) => () => add(`bench-${inFlight}-${i % 5}`)),
        inFlight,
      );
      const seconds = (Date.now() - t) / 1000;
      console.log(
        `ADD x100 on 5 nodes, ${inFlight} in flight: ${(100 / seconds).toFixed(1)} ADD/s, p50 ${percentile(latencies, 0.5)} ms, p95 ${percentile(latencies, 0.95)} ms`,
      );
    }
    console.log(`control worker (this process) RSS: ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`);
  } finally {
    await worker.stop();
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
