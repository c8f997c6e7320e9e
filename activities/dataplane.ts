// The node agent's activities: activate and deactivate one attachment in ptp mode; end an offer.
import { asyncLocalStorage } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { DataplaneFailure, type AttachmentInput, type DataplaneActivities } from '../domain/dataplane';
import { isInterfaceName, type ActivatedLinks } from '../domain/lease';
import type { OfferAnswer, OfferRevocation } from '../domain/offer';
import { configureHostEnd, configurePodEnd } from '../kernel/addressing';
import { pauseAfter } from '../kernel/failpoint';
import { forwardingKeeper } from '../kernel/forwarding';
import type { Netns } from '../kernel/ip';
import { attachmentLinkNames } from '../kernel/names';
import { netnsExists, requireNetns } from '../kernel/netns';
import { ensureVethPair, removeVethPair } from '../kernel/veth';

export interface NodeAgentDeps {
  /** The host side's network namespace; undefined: the agent's own. */
  hostNetns: Netns;
}

/** What ends an offer on the node: the agent's offer book (worker/agent/offers). */
export interface OfferKeeper {
  revoke(leaseId: string, run: string): Promise<OfferAnswer | undefined>;
}

function validate(input: AttachmentInput): void {
  const { netns, ifName } = input.attachment;
  if (!netns.startsWith('/')) {
    throw ApplicationFailure.nonRetryable(
      `CNI_NETNS "${netns}" is not an absolute path`,
      DataplaneFailure.invalidInput,
    );
  }
  if (!isInterfaceName(ifName)) {
    throw ApplicationFailure.nonRetryable(
      `invalid interface name "${ifName}"`,
      DataplaneFailure.invalidInput,
    );
  }
}

/**
 * A heartbeat per activation step: an agent that dies mid-activation is noticed within the
 * heartbeat timeout (workflows/dataplane), not the attempt's. The agent's offers also activate
 * through this function outside any activity: there is nobody to beat to.
 */
const beat = (step: string): void => asyncLocalStorage.getStore()?.heartbeat(step);

/** Runs both to the end (no process left running behind a failed attempt), then throws the first failure. */
async function both(a: Promise<void>, b: Promise<void>): Promise<void> {
  const failed = (await Promise.allSettled([a, b])).find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
}

export function createDataplaneActivities({
  hostNetns,
}: NodeAgentDeps): Omit<DataplaneActivities, 'revokeOffer'> {
  const ensureForwarding = forwardingKeeper(hostNetns);
  return {
    async activateAttachment(input: AttachmentInput): Promise<ActivatedLinks> {
      validate(input);
      const { containerId, netns, ifName } = input.attachment;
      await requireNetns(netns);
      beat('netns');
      const names = attachmentLinkNames(containerId, ifName);
      await ensureVethPair(hostNetns, netns, ifName, names);
      beat('veth-created');
      await pauseAfter('veth-created');
      // The two ends are in different namespaces: configured side by side.
      await both(
        configurePodEnd(netns, ifName, input.addresses, input.routes),
        configureHostEnd(hostNetns, names.hostName, input.addresses),
      );
      beat('configured');
      await ensureForwarding([...new Set(input.addresses.map((a) => a.family))]);
      return {
        host: { name: names.hostName, mac: names.hostMac },
        container: { name: ifName, mac: names.containerMac, sandbox: netns },
      };
    },

    async deactivateAttachment(input: AttachmentInput): Promise<void> {
      const { containerId, netns, ifName } = input.attachment;
      const names = attachmentLinkNames(containerId, ifName);
      const podNetns = netns.startsWith('/') && (await netnsExists(netns));
      await removeVethPair(hostNetns, netns, ifName, names, podNetns);
    },
  };
}

/** revokeOffer: the lease ends the agent's offer; an agent that pre-produces nothing holds none. */
export function offerActivities(offers: OfferKeeper | undefined): Pick<DataplaneActivities, 'revokeOffer'> {
  return {
    async revokeOffer({ leaseId, run }: OfferRevocation): Promise<OfferAnswer | null> {
      return (await offers?.revoke(leaseId, run)) ?? null;
    },
  };
}
