// Per-test-file access to the shared dev server: a client, a unique task queue, a control worker.
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { Runtime, type Worker } from '@temporalio/worker';
import { NetleaseConfigSchema, type NetleaseConfig } from '../../domain/config';
import { createLog, sdkLogger } from '../../observability/log';
import { serveCniApi, type CniApi, type HeldOffers } from '../../worker/agent/cni-api';
import { createControlWorker } from '../../worker/control/control-worker';

export function temporalAddress(): string {
  const address = process.env.NETLEASE_TEST_TEMPORAL;
  if (!address) throw new Error('NETLEASE_TEST_TEMPORAL is not set: run tests through jest (global setup)');
  return address;
}

export const uniqueName = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;

/** Where a test file's node agent serves the CNI API (the network config's agentSocket). */
export const cniPaths = (taskQueue: string) => ({
  socket: join(tmpdir(), 'netlease-test', taskQueue, 'cni.sock'),
  deleteQueue: join(tmpdir(), 'netlease-test', taskQueue, 'del-queue'),
});

/**
 * The CNI API the static shim talks to, served in this process for the file's task queue. Its
 * calls connect as the agent's do (a NativeConnection): the test's Core runtime is installed first.
 */
export function serveTestCniApi(taskQueue: string, held: HeldOffers = {}): Promise<CniApi> {
  quietRuntime();
  return serveCniApi({ ...cniPaths(taskQueue), held });
}

export interface TestTemporal {
  client: Client;
  taskQueue: string;
  close(): Promise<void>;
}

export async function connectTest(prefix: string): Promise<TestTemporal> {
  const connection = await Connection.connect({ address: temporalAddress() });
  return {
    client: new Client({ connection }),
    taskQueue: uniqueName(`tq-${prefix}`),
    close: () => connection.close(),
  };
}

/**
 * A config for tests: one dual-stack pool unless the test says otherwise. The pool is named after
 * the task queue: `pool/<name>` is one workflow per name, so a shared name would tie every test
 * file to the worker of whichever file started it first.
 */
export function testConfig(
  taskQueue: string,
  overrides: Partial<Record<keyof NetleaseConfig, unknown>> = {},
) {
  return NetleaseConfigSchema.parse({
    temporal: { address: temporalAddress(), taskQueue },
    pools: [{ name: taskQueue, cidrs: ['198.18.0.0/16', 'fd00:18::/64'] }],
    ...overrides,
  });
}

export interface RunningWorker {
  worker: Worker;
  stop(): Promise<void>;
}

let runtimeInstalled = false;
/**
 * Worker logs at WARN so test output shows failures, not every state change: through the same
 * adapter as the processes, so a failed activity attempt is one JSON line, not a stack.
 */
export function quietRuntime(): void {
  if (runtimeInstalled) return;
  Runtime.install({ logger: sdkLogger(createLog('test', 'warn')) });
  runtimeInstalled = true;
}

export async function runControlWorker(config: NetleaseConfig): Promise<RunningWorker> {
  quietRuntime();
  const control = await createControlWorker(config);
  const running = control.run();
  return {
    worker: control.worker,
    async stop() {
      control.worker.shutdown();
      await running;
      await control.close();
    },
  };
}

/**
 * One control worker per test file on its own task queue, and the node agent's CNI API for it;
 * `ctx.temporal` is set before tests run.
 */
export function withControlWorker(
  prefix: string,
  overrides: (taskQueue: string) => Partial<Record<keyof NetleaseConfig, unknown>> = () => ({}),
): { readonly temporal: TestTemporal; readonly context: HeldOffers } {
  let temporal: TestTemporal | undefined;
  let worker: RunningWorker | undefined;
  let cni: CniApi | undefined;
  const context: HeldOffers = {};
  beforeAll(async () => {
    temporal = await connectTest(prefix);
    worker = await runControlWorker(testConfig(temporal.taskQueue, overrides(temporal.taskQueue)));
    cni = await serveTestCniApi(temporal.taskQueue, context);
  });
  afterAll(async () => {
    await cni?.close();
    await worker?.stop();
    await temporal?.close();
  });
  return {
    get temporal() {
      if (!temporal) throw new Error('withControlWorker: used before beforeAll ran');
      return temporal;
    },
    /** What the file's CNI API calls use besides Temporal (a test may give it offers). */
    context,
  };
}
