// The reconciler's Temporal Schedule (one per control-plane task queue), kept at the configured
// interval, and triggered when a control worker starts watching (events it missed meanwhile).
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { NetleaseConfig } from '../../domain/config';
import { reconcileScheduleId } from '../../domain/ids';

export async function ensureReconcileSchedule(
  client: Client,
  config: NetleaseConfig,
  intervalSeconds: number,
) {
  const taskQueue = config.temporal.taskQueue;
  const scheduleId = reconcileScheduleId(taskQueue);
  const options = {
    scheduleId,
    spec: { intervals: [{ every: `${intervalSeconds}s` }] },
    action: {
      type: 'startWorkflow' as const,
      workflowType: 'reconcileWorkflow',
      taskQueue,
      workflowId: scheduleId,
      args: [],
    },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
  };
  try {
    await client.schedule.create(options);
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(scheduleId).update((previous) => ({ ...previous, spec: options.spec }));
  }
  return client.schedule.getHandle(scheduleId);
}

/** One reconcile run now, or right after the one in progress (a flapping holder stacks no more). */
export async function triggerReconcile(client: Client, taskQueue: string): Promise<void> {
  await client.schedule.getHandle(reconcileScheduleId(taskQueue)).trigger(ScheduleOverlapPolicy.BUFFER_ONE);
}
