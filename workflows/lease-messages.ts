// Messages of the lease workflow, in a module of their own so other workflows and clients can
// use them without importing the workflow.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { Offer, OfferAnswer } from '../domain/offer';
import type {
  ConsumeRequest,
  DeactivateRequest,
  LeaseGrant,
  LeaseState,
  ReleaseRequest,
} from '../domain/lease';

export const consumeUpdate = defineUpdate<LeaseGrant, [ConsumeRequest]>('consume');
/** The offer protocol (domain/offer): the node agent holds the grant to answer the first ADD… */
export const offerUpdate = defineUpdate<Offer, []>('offer');
/** …and confirms the ADD it answered from it: the sandbox becomes the lease's active attachment. */
export const confirmAnswerUpdate = defineUpdate<LeaseGrant, [OfferAnswer]>('confirmAnswer');
export const deactivateUpdate = defineUpdate<boolean, [DeactivateRequest]>('deactivate');
export const podRunningSignal = defineSignal<[]>('podRunning');
export const releaseSignal = defineSignal<[ReleaseRequest]>('release');
/** Sent by hand (UI Signal form or CLI) to run a parked activation again. */
export const retrySignal = defineSignal<[]>('retry');
/**
 * Sent by the lease's node workflow when a new incarnation of its node adopted the lease (its pod
 * still exists): an offer the old incarnation's agent holds is revoked.
 */
export const nodeReplacedSignal = defineSignal<[{ uid: string }]>('nodeReplaced');
export const leaseStateQuery = defineQuery<LeaseState>('state');

export const LEASE_WORKFLOW_TYPE = 'leaseWorkflow';
