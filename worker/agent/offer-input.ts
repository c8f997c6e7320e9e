// The dataplane's input for the sandbox an offer answered (the agent makes or removes its interface).
import type { AttachmentInput } from '../../domain/dataplane';
import type { OfferAnswer, OfferRecord } from '../../domain/offer';
import { routesFor } from '../../domain/routes';

export function attachmentInput(offer: OfferRecord): AttachmentInput {
  const { containerId, netns, ifName, routes } = offer.answered as OfferAnswer;
  return {
    leaseId: offer.leaseId,
    start: offer.start,
    attachment: { containerId, netns, ifName },
    addresses: offer.addresses,
    routes: routesFor(offer.addresses, routes),
  };
}
