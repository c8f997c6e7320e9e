// The offer protocol: a lease's grant held on the node agent's disk, so the agent answers the ADD
// itself: the grant of a pre-produced lease before its pod's first ADD (answered then without a
// Temporal round trip; AWS's ipamd answers from its checkpointed warm pool the same way), and the
// grant a cold ADD's consume returns when the agent makes the interface (ptp). One ADD path: take →
// make the interface → answer → confirm. The workflow stays the source of truth:
//   offer         (agent → lease, update `offer`): the agent holds the grant; the lease answers with
//                 its own terms and addresses (an `Offer`), once they are reserved; a consume
//                 `madeBy` the agent is an offer answered at once (its grant names the run);
//   answer        (agent, on disk): an ADD of the lease's terms gets the grant; in ptp mode the
//                 agent makes the interface first;
//   confirmAnswer (agent → lease, update `confirmAnswer`): the answered sandbox becomes the lease's
//                 attachment, active; the offer is spent;
//   revokeOffer   (lease → agent, activity): before the addresses go back, the offer ends on the
//                 node and hands back an answer not yet confirmed.
// One process holds the offers, so an answer and a revocation are never both won.
import { z } from 'zod';
import {
  ActivatedLinksSchema,
  LeaseStartSchema,
  SandboxSchema,
  termsMismatch,
  type LeaseStart,
  type Sandbox,
} from './lease';

export const OfferGrantSchema = z.object({
  family: z.union([z.literal(4), z.literal(6)]),
  address: z.string().min(1).max(64),
  prefixLength: z.number().int().min(0).max(128),
  gateway: z.string().max(64).optional(),
});

/** What the `offer` update returns: the lease's run, its own start (terms) and its addresses. */
export const OfferSchema = z.object({
  run: z.string().min(1),
  /** The lease's start, not the agent's settings: a lease an ADD started first has its own terms. */
  start: LeaseStartSchema,
  addresses: z.array(OfferGrantSchema).min(1),
});
export type Offer = z.infer<typeof OfferSchema>;

/** An ADD answered from the offer: its sandbox and, in ptp mode, the links the agent made. */
export const OfferAnswerSchema = SandboxSchema.extend({
  links: ActivatedLinksSchema.optional(),
  /** The addresses the answer told the runtime: a run other than the offer's takes only its own. */
  addresses: z.array(z.string().min(1).max(64)).max(8).optional(),
});
export type OfferAnswer = z.infer<typeof OfferAnswerSchema>;

/** The agent's record of an offer, one file per lease. */
export const OfferRecordSchema = OfferSchema.extend({
  leaseId: z.string().min(1),
  /** The sandbox an ADD was answered for, until the lease confirms it. */
  answered: OfferAnswerSchema.optional(),
});
export type OfferRecord = z.infer<typeof OfferRecordSchema>;

/** The node agent's side of a revocation (the revokeOffer activity's input). */
export interface OfferRevocation {
  leaseId: string;
  run: string;
}

/**
 * Whether an ADD may be answered from the offer: the lease's own terms (network, mode, pool, node)
 * and no other sandbox answered yet. The same sandbox again gets the same answer once it is whole
 * (in ptp mode: its interface made).
 */
export function offerAnswers(offer: OfferRecord, start: LeaseStart, sandbox: Sandbox): boolean {
  if (offer.start.podUid !== start.podUid || offer.start.ifName !== start.ifName) return false;
  if (termsMismatch(offer.start, start) !== undefined) return false;
  const answered = offer.answered;
  if (!answered) return true;
  const sameSandbox = answered.containerId === sandbox.containerId && answered.ifName === sandbox.ifName;
  return sameSandbox && (offer.start.mode === 'ipam' || answered.links !== undefined);
}

/** The record once an ADD of this sandbox is answered from it (in ptp mode: before its interface is made). */
export function answeredBy(offer: OfferRecord, sandbox: Sandbox): OfferRecord {
  const { containerId, netns, ifName, routes } = sandbox;
  return { ...offer, answered: { containerId, netns, ifName, ...(routes && { routes }) } };
}

/** A grant the agent holds again keeps the answer already given from the same run. */
export const keepsAnswer = (current: OfferRecord | undefined, offer: OfferRecord): boolean =>
  current?.run === offer.run && current.answered !== undefined;

/** What the lease made of an answer: took it, refused it, is gone, or has not said (asked again later). */
export type ConfirmOutcome = 'confirmed' | 'refused' | 'gone' | 'later';

/**
 * What the agent does after a confirmation: forget the record (the lease has the sandbox, or the
 * answer made nothing), undo the interface it made first (the lease did not keep the sandbox), or
 * ask again later.
 */
export function afterConfirm(outcome: ConfirmOutcome, offer: OfferRecord): 'forget' | 'undo' | 'again' {
  if (outcome === 'later') return 'again';
  if (outcome === 'confirmed' || offer.start.mode !== 'ptp') return 'forget';
  return 'undo';
}

/** The confirmAnswer update's argument: the answer, with the addresses it told the runtime. */
export const confirmationOf = (offer: OfferRecord): OfferAnswer => ({
  ...(offer.answered as OfferAnswer),
  addresses: offer.addresses.map((a) => a.address),
});
