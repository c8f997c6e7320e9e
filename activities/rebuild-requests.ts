// A node or pool answered from a table it cannot vouch for (a reset run, workflows/node/rebuild):
// its answer is not used. The caller asks it to rebuild for that run, once however many answers
// said so, and sends the requests again once the rebuild is done.
import type { Client, UpdateDefinition } from '@temporalio/client';
import type { RebuildRequest } from '../domain/node-requests';
import type { Settled } from './update-batches';

export class RebuildRequests {
  /** `workflowId@run` → the rebuild asked for it, while it runs. */
  private readonly asked = new Map<string, Promise<unknown>>();

  constructor(
    private readonly client: Client,
    private readonly update: UpdateDefinition<unknown, [RebuildRequest], string>,
  ) {}

  /** The answer's requests are sent again after the rebuild (or after it failed: then asked again). */
  ask<R>(workflowId: string, run: string): Settled<R> {
    const key = `${workflowId}@${run}`;
    if (!this.asked.has(key)) {
      const rebuilt = this.client.workflow
        .getHandle(workflowId, run)
        .executeUpdate(this.update, { args: [{ forRun: run }], updateId: `rebuild/${run}` })
        .catch(() => undefined) // a run gone meanwhile, or refused: the requests go again anyway
        .finally(() => this.asked.delete(key));
      this.asked.set(key, rebuilt);
    }
    return { again: true };
  }
}
