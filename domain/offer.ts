// An offer: the grant of a pre-produced lease, held on the node agent's disk so the pod's first
// ADD is answered without a Temporal round trip (AWS's ipamd answers from its checkpointed warm
// pool the same way). The workflow stays the source of truth: the `offer` update tells it the
// offer is held, the agent confirms every answer with the usual consume update, and before the
// lease returns its addresses it revokes the offer on the node, which hands back any answer not
// yet confirmed. One process holds the offers, so an answer and a revocation are never both won.
import { z } from 'zod';
import { ConsumeSchema, LeaseStartSchema, type ConsumeRequest, type LeaseStart } from './lease';

export const OfferGrantSchema = z.object({
  family: z.union([z.literal(4), z.literal(6)]),
  address: z.string().min(1).max(64),
  prefixLength: z.number().int().min(0).max(128),
  gateway: z.string().max(64).optional(),
});

export const OfferRecordSchema = z.object({
  leaseId: z.string().min(1),
  /** The lease run that knows of the offer: answers are confirmed to it and only it revokes. */
  run: z.string().min(1),
  start: LeaseStartSchema,
  addresses: z.array(OfferGrantSchema).min(1),
  /** The sandbox an ADD was answered for, until the workflow confirms it. */
  answered: ConsumeSchema.optional(),
});
export type OfferRecord = z.infer<typeof OfferRecordSchema>;

/** What the `offer` update returns to the agent once the addresses are reserved. */
export interface OfferAccepted {
  run: string;
  addresses: OfferRecord['addresses'];
}

/** The node agent's side of a revocation: the answer it gave from the offer, if any (null: none). */
export interface OfferRevocation {
  leaseId: string;
  run: string;
}

const sameStart = (a: LeaseStart, b: LeaseStart): boolean =>
  JSON.stringify(LeaseStartSchema.parse(a)) === JSON.stringify(LeaseStartSchema.parse(b));

/**
 * Whether an ADD may be answered from the offer: the same lease start (pod, interface, node, pool,
 * network, mode) and no other sandbox answered yet. The same sandbox again gets the same answer
 * once it is whole (in ptp mode: its interface made).
 */
export function offerAnswers(offer: OfferRecord, start: LeaseStart, request: ConsumeRequest): boolean {
  if (!sameStart(offer.start, start)) return false;
  const answered = offer.answered;
  if (!answered) return true;
  const sameSandbox = answered.containerId === request.containerId && answered.ifName === request.ifName;
  return sameSandbox && (offer.start.mode === 'ipam' || answered.links !== undefined);
}
