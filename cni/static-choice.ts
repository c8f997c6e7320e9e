// The static addresses of an ADD (domain/static-addresses): the pod's annotation, checked against
// the spec its pool workflow serves before any lease starts. A mistake in it is error 7 with the
// reason `invalid-static-address`; whether the address is free is the node's and pool's to say.
import type { Client } from '@temporalio/client';
import type { Labels } from '../domain/label-selector';
import {
  parseStaticAddresses,
  STATIC_ADDRESSES_ANNOTATION,
  staticAddressProblem,
} from '../domain/static-addresses';
import { servedSpec } from '../temporal/pool-catalogue';
import { CniCode, CniError } from './errors';

interface Pod {
  namespace: string;
  name: string;
  annotations?: Labels;
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
