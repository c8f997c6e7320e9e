// The pool of an ADD (domain/pool-selection): from the pools the control plane serves (their
// selectors), the pod's facts (annotations, namespace and node labels) as the node agent keeps
// them, and the network config's `pool`. A refusal is a mistake in the request (error 7, its
// reason code first): no lease is started. Without the agent's facts (no kubernetes section, or
// an ADD with no pod) no label is known, and a pool with a selector is not taken. The served pools
// come from the agent's watch of the NetleasePool objects where it tells them (kubernetes/
// pool-selectors), else from the pool catalogue (Temporal). The pod's static addresses are read
// from the same facts (cni/static-choice).
import type { Client } from '@temporalio/client';
import type { LeaseStart } from '../domain/lease';
import {
  selectPool,
  type PoolSelectors,
  type SelectionInput,
  type Selection,
} from '../domain/pool-selection';
import type { PodFactsSource } from '../kubernetes/selection-facts';
import { errorMessage } from '../observability/log';
import { servedPool, servedPools } from '../temporal/pool-catalogue';
import { CniCode, CniError } from './errors';
import { staticAddressesFor, stickyAddressesFor } from './static-choice';

type Pod = Pick<LeaseStart, 'podNamespace' | 'podName' | 'podUid' | 'nodeName'>;

async function selectionFor(
  facts: PodFactsSource | undefined,
  pod: Pod,
): Promise<Omit<SelectionInput, 'pools'>> {
  const known = facts && pod.podName && pod.podNamespace;
  if (!known)
    return {
      pod: { namespace: pod.podNamespace, name: pod.podName },
      namespace: { name: pod.podNamespace },
      node: { name: pod.nodeName },
    };
  const { podNamespace: namespace, podName: name, podUid: uid, nodeName } = pod;
  try {
    return await facts.forPod({ namespace, name, uid, nodeName });
  } catch (err) {
    // Not Temporal's: said as what it is (a 403 is the agent's RBAC), and the runtime asks again.
    throw new CniError(
      CniCode.tryAgainLater,
      `pool selection cannot read pod ${namespace}/${name}, its namespace or node ${nodeName} from the Kubernetes API: ${errorMessage(err)}`,
      '',
      'pod-facts-unreadable',
    );
  }
}

/**
 * The served pools: as the NetleasePool objects tell them (each one they do not tell asked of its
 * pool workflow), else the catalogue.
 */
async function poolsFor(
  client: Client,
  taskQueue: string,
  facts: PodFactsSource | undefined,
  fresh: boolean,
): Promise<PoolSelectors[]> {
  const objects = facts?.servedPools?.();
  if (!objects) return servedPools(client, taskQueue, fresh);
  const unread = await Promise.all(objects.unread.map((name) => servedPool(client, name)));
  return [...objects.pools, ...unread.filter((p) => p !== undefined)];
}

/** Whether the served pools as kept may be behind: the selection names a pool they lack. */
const namesUnknown = (selection: Selection, input: SelectionInput): boolean =>
  'refused' in selection
    ? selection.refused === 'invalid-pool-annotation'
    : !input.pools.some((p) => p.name === selection.pool);

/**
 * The pool the ADD's lease is for and the pod's static addresses (cni/static-choice), from one
 * read of its facts; a CniError (7) naming the reason when there is no pool or the addresses are
 * not the pool's to give.
 */
export async function chosenTerms(
  client: Client,
  taskQueue: string,
  facts: PodFactsSource | undefined,
  pod: Pod,
  configPool: string | undefined,
): Promise<Pick<LeaseStart, 'pool' | 'staticAddresses' | 'stickyKey'>> {
  const known = await selectionFor(facts, pod);
  const pool = await chosenPool(client, taskQueue, facts, known, configPool);
  const staticAddresses = await staticAddressesFor(client, pool, known.pod);
  if (staticAddresses) return { pool, staticAddresses };
  const sticky = await stickyAddressesFor(client, pool, known.pod, known.namespace.annotations);
  return sticky ? { pool, ...sticky } : { pool };
}

/** The pool of the pod; a CniError (7) naming the reason when there is none. */
async function chosenPool(
  client: Client,
  taskQueue: string,
  facts: PodFactsSource | undefined,
  known: Omit<SelectionInput, 'pools'>,
  configPool: string | undefined,
): Promise<string> {
  const decide = async (fresh: boolean) => {
    const input = { ...known, pools: await poolsFor(client, taskQueue, facts, fresh), configPool };
    return { input, selection: selectPool(input) };
  };
  const kept = await decide(false);
  const { selection } = namesUnknown(kept.selection, kept.input) ? await decide(true) : kept;
  if ('refused' in selection)
    throw new CniError(CniCode.invalidNetworkConfig, selection.message, '', selection.refused);
  return selection.pool;
}
