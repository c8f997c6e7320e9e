// Replays every workflow a test file ran (found by its task queue) against the current bundle, and
// histories kept as files.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import * as proto from '@temporalio/proto';
import { patchProtobufRoot } from '@temporalio/proto/lib/patch-protobuf-root';
import { Worker } from '@temporalio/worker';
import { prebuiltBundle } from '../../worker/control/bundle';
import { failpointSinks } from '../../worker/control/failpoint-sinks';
import { quietRuntime, type TestTemporal } from './temporal';

const WORKFLOW_TASK_COMPLETED = proto.temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED;

/** Longer than any file's replay alone (under a second); jest's own limit is 120 s. */
const REPLAY_STUCK_MS = 100_000;

export async function replayTaskQueue(
  client: Client,
  taskQueue: string,
): Promise<{ replayed: number; errors: string[] }> {
  // Where it got to, for the error if it sticks (a CI once timed out here without saying where).
  const progress = { listed: 0, fetched: 0, at: '' };
  const replay = async () => {
    const histories = [];
    let unbegun = 0;
    for await (const execution of client.workflow.list({ query: `TaskQueue = '${taskQueue}'` })) {
      progress.listed++;
      progress.at = `${execution.workflowId} ${execution.runId}`;
      const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
      progress.fetched++;
      // A run whose first workflow task has not completed has no command to diverge, and the
      // replayer waits for that task for good (a run just continued-as-new: one event). Counted.
      if (history.events?.some((e) => e.eventType === WORKFLOW_TASK_COMPLETED))
        histories.push({ workflowId: execution.workflowId, history });
      else unbegun++;
    }
    progress.at = 'replaying';
    const { replayed, errors } = await replayAll(histories);
    return { replayed: replayed + unbegun, errors };
  };
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(`replay of ${taskQueue} stuck after ${REPLAY_STUCK_MS} ms: ${JSON.stringify(progress)}`),
        ),
      REPLAY_STUCK_MS,
    );
  });
  try {
    return await Promise.race([replay(), stuck]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Replays history files (`temporal workflow show --output json`), each named in an error by its
 * path under `dir`.
 */
export function replayFiles(dir: string, files: string[]): Promise<{ replayed: number; errors: string[] }> {
  return replayAll(
    files.map((file) => ({
      workflowId: file,
      history: historyFromShowJson(readFileSync(join(dir, file), 'utf8')),
    })),
  );
}

/** Replays each history against the current bundle: how many were replayed, and each one's divergence. */
export async function replayAll(
  histories: Array<{ workflowId: string; history: proto.temporal.api.history.v1.IHistory }>,
): Promise<{ replayed: number; errors: string[] }> {
  quietRuntime();
  const errors: string[] = [];
  let replayed = 0;
  for await (const result of Worker.runReplayHistories(
    { workflowBundle: prebuiltBundle(), sinks: failpointSinks() },
    histories,
  )) {
    replayed++;
    if (result.error) errors.push(`${result.workflowId}: ${result.error.message}`);
  }
  return { replayed, errors };
}

/**
 * Replays this file's histories and fails unless at least `atLeast` were replayed (visibility that
 * returns nothing must not pass) and none diverged.
 */
export async function expectReplayed(
  temporal: Pick<TestTemporal, 'client' | 'taskQueue'>,
  atLeast: number,
): Promise<number> {
  const { replayed, errors } = await replayTaskQueue(temporal.client, temporal.taskQueue);
  expect(errors).toEqual([]);
  expect(replayed).toBeGreaterThanOrEqual(atLeast);
  return replayed;
}

type History = proto.temporal.api.history.v1.History;

/**
 * A history as `temporal workflow show --output json` writes it (proto JSON, enum names). Not the
 * SDK's historyFromJSON: it parses with @temporalio/common's own protobufjs copy, which rejects
 * @temporalio/proto's types ("type must be a Type") when npm installs the two copies apart.
 */
export function historyFromShowJson(text: string): History {
  const fromProto = createRequire(require.resolve('@temporalio/proto'));
  const protojson = fromProto('protobufjs/ext/protojson') as {
    fromJson(type: unknown, json: unknown, options: { ignoreUnknownFields: boolean }): History;
  };
  const root = patchProtobufRoot(proto) as unknown as { lookupType(name: string): unknown };
  return protojson.fromJson(root.lookupType('temporal.api.history.v1.History'), JSON.parse(text), {
    ignoreUnknownFields: true,
  });
}

/** Replays one history against the current bundle: the error's message, or undefined. */
export async function replayErrorOf(
  workflowId: string,
  history: proto.temporal.api.history.v1.IHistory,
): Promise<string | undefined> {
  quietRuntime();
  for await (const result of Worker.runReplayHistories(
    { workflowBundle: prebuiltBundle(), sinks: failpointSinks() },
    [{ workflowId, history }],
  ))
    return result.error?.message;
  throw new Error(`${workflowId}: nothing was replayed`);
}
