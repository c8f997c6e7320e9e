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

const nameTaken = (err: unknown): boolean => err instanceof IpError && err.exists;

/**
 * Converges to exactly one pair. Creating it is tried first: on a fresh attachment nothing holds
 * either name and one process does it all; creation is atomic, so a failure leaves nothing.
 */
export async function ensureVethPair(
  host: Netns,
  podNetns: string,
  ifName: string,
  names: AttachmentLinkNames,
): Promise<void> {
  try {
    await create(host, podNetns, ifName, names);
  } catch (err) {
    if (!nameTaken(err)) throw err;
    await converge(host, podNetns, ifName, names, false);
  }
}

/** A name is taken: keeps a complete pair of ours, removes our half-made remnants, else conflicts. */
async function converge(
  host: Netns,
  podNetns: string,
  ifName: string,
  names: AttachmentLinkNames,
  retried: boolean,
): Promise<void> {
  const [pod, hostLink] = await Promise.all([findLink(podNetns, ifName), findLink(host, names.hostName)]);
  if (pod && pod.address !== names.containerMac) throw conflict(ifName, podNetns, mac(pod));
  if (hostLink && !isOurHostEnd(hostLink, names)) throw hostConflict(host, names, hostLink);
  if (pod && hostLink && isPair(hostLink, pod)) return;
  if (hostLink) await deleteLink(host, names.hostName);
  if (pod) await deleteLink(podNetns, ifName);
  try {
    await create(host, podNetns, ifName, names);
  } catch (err) {
    // Another attempt of the same activation made it in between: look again, once.
    if (nameTaken(err) && !retried) return converge(host, podNetns, ifName, names, true);
    throw err;
  }
}

/**
 * Removes the pair: each end only when it is ours (a foreign link stays). Gone already is fine.
 * Deleting one end of a veth deletes the other, so the pod end needs no step of its own when it
 * is our host end's peer.
 */
export async function removeVethPair(
  host: Netns,
  podNetns: string,
  ifName: string,
  names: AttachmentLinkNames,
  podNetnsExists: boolean,
): Promise<void> {
  const [hostLink, pod] = await Promise.all([
    findLink(host, names.hostName),
    podNetnsExists ? findLink(podNetns, ifName) : undefined,
  ]);
  const ours = hostLink && isOurHostEnd(hostLink, names) ? hostLink : undefined;
  if (ours) await deleteLink(host, names.hostName);
  if (pod?.address === names.containerMac && !(ours && isPair(ours, pod))) {
    await deleteLink(podNetns, ifName);
  }
}
