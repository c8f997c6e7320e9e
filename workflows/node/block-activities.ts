// The control worker's block activities, as the node workflow calls them.
import { proxyActivities } from '@temporalio/workflow';
import type { ControlActivities } from '../../activities/control';
import { FailureType } from '../../domain/lease';

export const { acquireBlock, returnBlocks } = proxyActivities<ControlActivities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '200 ms',
    maximumInterval: '5 seconds',
    nonRetryableErrorTypes: [FailureType.exhausted],
  },
});
