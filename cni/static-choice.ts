// The static addresses of an ADD: the pod's annotation (domain/static-addresses), checked against
// the spec its pool workflow serves before any lease starts (a mistake in it is error 7 with the
// reason `invalid-static-address`), else those its pool keeps for its StatefulSet ordinal
// (domain/sticky-addresses). Whether the address is free is the node's and pool's to say.
import type { Client } from '@temporalio/client';
import type { Labels } from '../domain/label-selector';
import {
  parseStaticAddresses,
  STATIC_ADDRESSES_ANNOTATION,
  staticAddressProblem,
} from '../domain/static-addresses';
import { stickyKeyOf, STICKY_ANNOTATION } from '../domain/sticky-addresses';
import { servedSpec } from '../temporal/pool-catalogue';
import { reservedAddresses } from '../temporal/reservations';
import { CniCode, CniError } from './errors';

interface Pod {
  namespace: string;
  name: string;
  annotations?: Labels;
  /** Its controlling StatefulSet (kubernetes/selection-facts). */
  statefulSet?: string;
}

/** The pod's static addresses, canonical and comma-joined; undefined: it names none. */
export async function staticAddressesFor(
  client: Client,
  pool: string,
  pod: Pod,
): Promise<string | undefined> {
  const text = pod.annotations?.[STATIC_ADDRESSES_ANNOTATION];
  if (text === undefined) return undefined;
  const refuse = (why: string) =>
    new CniError(
      CniCode.invalidNetworkConfig,
      `pod ${pod.namespace}/${pod.name}'s annotation ${STATIC_ADDRESSES_ANNOTATION}: ${why}`,
      '',
      'invalid-static-address',
    );
  const addresses = parseStaticAddresses(text);
  if (!Array.isArray(addresses)) throw refuse(addresses.problem);
  const spec = await servedSpec(client, pool);
  if (!spec)
    throw new CniError(
      CniCode.tryAgainLater,
      `the control plane is starting: pool "${pool}" is not open yet`,
      '',
      'control-plane-starting',
    );
  const problem = addresses.map((a) => staticAddressProblem(spec, a)).find((p) => p !== undefined);
  if (problem) throw refuse(problem);
  return addresses.join(',');
}

/**
 * The addresses the pool keeps for the pod's StatefulSet ordinal, reserved at its first ADD, and
 * their key; undefined when the pod is not sticky (no StatefulSet, or not opted in: the pod's or
 * namespace's annotation, else the pool's `sticky.statefulSets`, which only then is asked for).
 */
export async function stickyAddressesFor(
  client: Client,
  pool: string,
  pod: Pod,
  namespaceAnnotations: Labels | undefined,
): Promise<{ staticAddresses: string; stickyKey: string } | undefined> {
  if (!pod.statefulSet) return undefined;
  const said = pod.annotations?.[STICKY_ANNOTATION] ?? namespaceAnnotations?.[STICKY_ANNOTATION];
  const poolSticky = said === undefined && (await servedSpec(client, pool))?.sticky?.statefulSets === true;
  const key = stickyKeyOf(pod, namespaceAnnotations, poolSticky);
  if (key === undefined) return undefined;
  const addresses = await reservedAddresses(client, pool, key);
  return { staticAddresses: addresses.join(','), stickyKey: key };
}
