// An activity that waits on a workflow beats while it waits.
import { asyncLocalStorage } from '@temporalio/activity';

/** How often a waiting activity heartbeats (the shortest heartbeat timeout is workflows/lease's). */
const BEAT_EVERY_MS = 1000;

/**
 * Heartbeats through the whole activity (the quorum read, the wait on the node): a control worker
 * that dies mid-call is noticed within the heartbeat timeout, not the start-to-close (which set
 * the p99 of a SIGKILL). The SDK sends a heartbeat at most every 0.8 × that timeout. (The lease
 * runs them as local activities first, workflows/lease/addresses: those do not beat.)
 */
export async function beating<T>(work: () => Promise<T>): Promise<T> {
  const context = asyncLocalStorage.getStore();
  // A local activity has no heartbeat: its workflow task's timeout notices a dead worker.
  const beats = context && !context.info.isLocal;
  const timer = beats ? setInterval(() => context.heartbeat(), BEAT_EVERY_MS) : undefined;
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
