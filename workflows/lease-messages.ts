// Messages of the lease workflow, in a module of their own so other workflows and clients can
// use them without importing the workflow.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { OfferAccepted } from '../domain/offer';
import type {
  ConsumeRequest,
  DeactivateRequest,
  LeaseGrant,
  LeaseState,
  ReleaseRequest,
} from '../domain/lease';

export const consumeUpdate = defineUpdate<LeaseGrant, [ConsumeRequest]>('consume');
/** The node agent holds the produced grant on disk to answer the pod's first ADD (domain/offer). */
export const offerUpdate = defineUpdate<OfferAccepted, []>('offer');
export const deactivateUpdate = defineUpdate<boolean, [DeactivateRequest]>('deactivate');
export const podRunningSignal = defineSignal<[]>('podRunning');
export const releaseSignal = defineSignal<[ReleaseRequest]>('release');
/** Sent by hand (UI Signal form or CLI) to run a parked activation again. */
export const retrySignal = defineSignal<[]>('retry');
export const leaseStateQuery = defineQuery<LeaseState>('state');

export const LEASE_WORKFLOW_TYPE = 'leaseWorkflow';
