// The veth pair of one attachment: host end `nl<hash>` in the host namespace, pod end CNI_IFNAME
// in the pod's. Made in one `ip link add`, so a crash leaves either both ends or neither.
import { ApplicationFailure } from '@temporalio/common';
import { DataplaneFailure } from '../domain/dataplane';
import { ip, IpError, netnsPath, type Netns } from './ip';
import { deleteLink, findLink, type Link } from './links';
import type { AttachmentLinkNames } from './names';

const isPair = (host: Link, pod: Link): boolean =>
  host.link_index === pod.ifindex && pod.link_index === host.ifindex;

async function create(host: Netns, podNetns: string, ifName: string, names: AttachmentLinkNames) {
  await ip(host, [
    'link',
    'add',
    names.hostName,
    'address',
    names.hostMac,
    'type',
    'veth',
    'peer',
    'name',
    ifName,
    'address',
    names.containerMac,
    'netns',
    netnsPath(podNetns),
  ]);
}

/** Converges to exactly one pair: keeps a complete one, removes our half-made remnants. */
export async function ensureVethPair(
  host: Netns,
  podNetns: string,
  ifName: string,
  names: AttachmentLinkNames,
  retried = false,
): Promise<void> {
  const pod = await findLink(podNetns, ifName);
  if (pod && pod.address !== names.containerMac) {
    throw ApplicationFailure.retryable(
      `${ifName} in ${podNetns} exists and is not netlease's (MAC ${pod.address ?? 'none'})`,
      DataplaneFailure.linkConflict,
    );
  }
  const hostLink = await findLink(host, names.hostName);
  if (pod && hostLink && isPair(hostLink, pod)) return;
  if (hostLink) await deleteLink(host, names.hostName);
  if (pod) await deleteLink(podNetns, ifName);
  try {
    await create(host, podNetns, ifName, names);
  } catch (err) {
    // Another attempt of the same activation made it in between: look again, once.
    if (err instanceof IpError && err.exists && !retried) {
      return ensureVethPair(host, podNetns, ifName, names, true);
    }
    throw err;
  }
}

/** Removes the pair; the pod end alone only when it carries our MAC. Gone already is fine. */
export async function removeVethPair(
  host: Netns,
  podNetns: string,
  ifName: string,
  names: AttachmentLinkNames,
  podNetnsExists: boolean,
): Promise<void> {
  await deleteLink(host, names.hostName);
  if (!podNetnsExists) return;
  const pod = await findLink(podNetns, ifName);
  if (pod?.address === names.containerMac) await deleteLink(podNetns, ifName);
}
