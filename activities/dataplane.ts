// The node agent's activities: activate and deactivate one attachment in ptp mode; end an offer.
import { asyncLocalStorage } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { attachmentLocks, SupersededActivation } from './attachment-locks';
import { DataplaneFailure, type AttachmentInput, type DataplaneActivities } from '../domain/dataplane';
import { isInterfaceName, type ActivatedLinks, type Attachment } from '../domain/lease';
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
 * heartbeat timeout (workflows/dataplane), not the attempt's; its answer brings a cancellation.
 * The agent's offers also activate through this function outside any activity: there is nobody
 * to beat to, nor any cancellation to hear.
 */
const beat = (step: string): void => asyncLocalStorage.getStore()?.heartbeat(step);
const activityCancelled = (): AbortSignal | undefined => asyncLocalStorage.getStore()?.cancellationSignal;

/** Runs both to the end (no process left running behind a failed attempt), then throws the first failure. */
async function both(a: Promise<void>, b: Promise<void>): Promise<void> {
  const failed = (await Promise.allSettled([a, b])).find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/** The lock of an attachment: its host link's name, which its kernel objects all hang from. */
const lockKey = ({ containerId, ifName }: Pick<Attachment, 'containerId' | 'ifName'>): string =>
  attachmentLinkNames(containerId, ifName).hostName;

/** Removes the pair of an attachment, each end only when it is ours; gone already is fine. */
async function removeAttachment(host: Netns, { attachment }: AttachmentInput): Promise<void> {
  const { containerId, netns, ifName } = attachment;
  const names = attachmentLinkNames(containerId, ifName);
  const podNetns = netns.startsWith('/') && (await netnsExists(netns));
  await removeVethPair(host, netns, ifName, names, podNetns);
}

/** A superseded activation fails as such; a cancelled one throws the SDK's cancellation as it is. */
function stopped(err: unknown): unknown {
  if (!(err instanceof SupersededActivation)) return err;
  return ApplicationFailure.retryable(err.message, DataplaneFailure.superseded);
}

/**
 * Waits until the activations of this attachment in flight have stopped and removed what they made
 * (a revoked offer's answer hands its sandbox to the lease's release, which deactivates it next).
 */
export function stopActivations(attachment: Pick<Attachment, 'containerId' | 'ifName'>): Promise<void> {
  return attachmentLocks.run(lockKey(attachment), 'removal', () => Promise.resolve());
}

export function createDataplaneActivities({
  hostNetns,
}: NodeAgentDeps): Omit<DataplaneActivities, 'revokeOffer'> {
  const ensureForwarding = forwardingKeeper(hostNetns);

  /** The steps; after each, a stopped activation goes no further and removes what it made. */
  const activate = async (input: AttachmentInput, stop: AbortSignal): Promise<ActivatedLinks> => {
    const { containerId, netns, ifName } = input.attachment;
    const names = attachmentLinkNames(containerId, ifName);
    const done = async (step: string) => {
      beat(step);
      await pauseAfter(step, stop);
      stop.throwIfAborted();
    };
    try {
      await requireNetns(netns);
      await done('netns');
      await ensureVethPair(hostNetns, netns, ifName, names);
      await done('veth-created');
      // The two ends are in different namespaces: configured side by side.
      await both(
        configurePodEnd(netns, ifName, input.addresses, input.routes),
        configureHostEnd(hostNetns, names.hostName, input.addresses),
      );
      await done('configured');
      await ensureForwarding([...new Set(input.addresses.map((a) => a.family))]);
    } catch (err) {
      if (stop.aborted) await removeAttachment(hostNetns, input);
      throw err;
    }
    return {
      host: { name: names.hostName, mac: names.hostMac },
      container: { name: ifName, mac: names.containerMac, sandbox: netns },
    };
  };

  return {
    async activateAttachment(input: AttachmentInput): Promise<ActivatedLinks> {
      validate(input);
      const key = lockKey(input.attachment);
      return attachmentLocks
        .run(key, 'activation', (stop) => activate(input, stop), activityCancelled())
        .catch((err: unknown) => Promise.reject(stopped(err)));
    },

    async deactivateAttachment(input: AttachmentInput): Promise<void> {
      await attachmentLocks.run(lockKey(input.attachment), 'removal', () =>
        removeAttachment(hostNetns, input),
      );
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
