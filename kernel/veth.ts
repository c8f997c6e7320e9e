// The veth pair of one attachment: host end `nl<hash>` in the host namespace, pod end CNI_IFNAME
// in the pod's. Made in one `ip link add`, so a crash leaves either both ends or neither.
import { ApplicationFailure } from '@temporalio/common';
import { DataplaneFailure } from '../domain/dataplane';
import { ip, IpError, netnsPath, type Netns } from './ip';
import { deleteLink, findLink, type Link } from './links';
import type { AttachmentLinkNames } from './names';

const isPair = (host: Link, pod: Link): boolean =>
  host.link_index === pod.ifindex && pod.link_index === host.ifindex;

/** As the pod side's MAC does there: only a veth with our host MAC is ours to replace or remove. */
const isOurHostEnd = (link: Link, names: AttachmentLinkNames): boolean =>
  link.linkinfo?.info_kind === 'veth' && link.address === names.hostMac;

const conflict = (name: string, where: string, what: string): ApplicationFailure =>
  ApplicationFailure.retryable(
    `${name} in ${where} exists and is not netlease's (${what})`,
    DataplaneFailure.linkConflict,
  );

const mac = (link: Link): string => `MAC ${link.address ?? 'none'}`;

function hostConflict(host: Netns, names: AttachmentLinkNames, link: Link): ApplicationFailure {
  const where = host ?? "the node agent's namespace";
  return conflict(names.hostName, where, `${link.linkinfo?.info_kind ?? 'no kind'}, ${mac(link)}`);
}

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
  if (pod && pod.address !== names.containerMac) throw conflict(ifName, podNetns, mac(pod));
  const hostLink = await findLink(host, names.hostName);
  if (hostLink && !isOurHostEnd(hostLink, names)) throw hostConflict(host, names, hostLink);
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

/** Removes the pair: each end only when it is ours (a foreign link stays). Gone already is fine. */
export async function removeVethPair(
  host: Netns,
  podNetns: string,
  ifName: string,
  names: AttachmentLinkNames,
  podNetnsExists: boolean,
): Promise<void> {
  const hostLink = await findLink(host, names.hostName);
  if (hostLink && isOurHostEnd(hostLink, names)) await deleteLink(host, names.hostName);
  if (!podNetnsExists) return;
  const pod = await findLink(podNetns, ifName);
  if (pod?.address === names.containerMac) await deleteLink(podNetns, ifName);
}
