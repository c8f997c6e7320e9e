// The control worker's activities as the node workflow calls them: blocks from and to the pool,
// and the cluster and lease reads that its incarnations, compensation and rebuild decide on.
import { proxyActivities } from '@temporalio/workflow';
import type { ControlActivities } from '../../activities/control';
import { FailureType } from '../../domain/lease';

export const { acquireBlock, returnBlocks, moveBlocks } = proxyActivities<ControlActivities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '200 ms',
    maximumInterval: '5 seconds',
    nonRetryableErrorTypes: [FailureType.exhausted],
  },
});

/** Quorum reads of the cluster: retried until the API answers (a decision waits for them). */
export const { readNodeIncarnation, judgePods } = proxyActivities<ControlActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/** Reads every open lease of the node and the pools' blocks: heartbeats while it goes. */
export const { nodeTableEvidence } = proxyActivities<ControlActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});
