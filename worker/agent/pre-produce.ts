// Pre-produced leases: the node agent watches the pods bound to its node and starts each one's
// lease (produce: addresses reserved) as soon as it is bound, before the runtime calls ADD; the
// ADD then joins the running workflow. The watch opens without a resourceVersion, so its first
// events are a quorum snapshot of the node's pods; every later hint is verified by a quorum read
// before anything is reserved (seed 002). The reservation is bound to the pod UID (seed 003), and
// a pod deleted before its ADD is released by the control plane's usual verified path.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  type Client,
} from '@temporalio/client';
import type { OfferBook } from './offers';
import type { PreProduce } from '../../domain/config';
import { shouldPreProduce } from '../../domain/cluster-decisions';
import { PodSchema, podFact, type PodFact } from '../../domain/k8s';
import { leaseWorkflowId, offerUpdateId } from '../../domain/ids';
import type { LeaseStart } from '../../domain/lease';
import { LEASE_WORKFLOW_TYPE, offerUpdate } from '../../workflows/lease-messages';
import type { ClusterReader } from '../../kubernetes/cluster-reader';
import type { KubeClients } from '../../kubernetes/kube';
import { leaseStartOptions } from '../../temporal/leases';
import { poolIsServed } from '../../temporal/pools';
import { servedPools } from '../../temporal/pool-catalogue';
import { CniError } from '../../cni/errors';
import { chosenTerms } from '../../cni/pool-choice';
import type { PodFactsSource } from '../../kubernetes/selection-facts';
import { isGoneError, isUpdateRefusal } from '../../temporal/workflow-gone';
import { preProduced } from '../../observability/agent-metrics';
import { errorMessage, silentLog, type Log } from '../../observability/log';
import { watchForever, type WatchLoop } from '../../kubernetes/watch-loop';

export interface PreProducer {
  /** Pod UIDs whose leases this agent started (or found started). */
  readonly started: ReadonlySet<string>;
  stop(): void;
}

export interface PreProduceOptions {
  client: Client;
  kube: KubeClients;
  reader: ClusterReader;
  nodeName: string;
  taskQueue: string;
  settings: PreProduce;
  /** Where ipam leases' grants are held to answer their first ADD (cni/offers); none: ADD asks the lease. */
  offers?: OfferBook;
  /** The pods' facts the guess of their pool reads, as the ADD does (none: no label is known). */
  facts?: PodFactsSource;
  /** Told each event of the pre-producer's pod watch first (one watch of the node's pods per agent). */
  onPodEvent?: (type: string, object: unknown) => void;
  log?: Log;
}

const leaseStartFor = (pod: PodFact, nodeName: string, settings: PreProduce, terms: Terms): LeaseStart => ({
  podUid: pod.uid,
  podNamespace: pod.namespace,
  podName: pod.name,
  ifName: settings.ifName,
  nodeName,
  ...terms,
  mode: settings.mode,
  network: settings.network,
});

type Terms = Awaited<ReturnType<typeof chosenTerms>>;

/**
 * The guess of the pod's pool and static addresses: chosen as its ADD will choose them
 * (cni/pool-choice), from the same facts; undefined when its ADD will be refused (the reason is
 * logged). A wrong guess (a label changed meanwhile) gives way to the ADD's terms
 * (workflows/lease/reterm).
 */
async function guessedTerms(options: PreProduceOptions, pod: PodFact, log: Log): Promise<Terms | undefined> {
  const { client, taskQueue, facts, nodeName, settings } = options;
  const named = { podNamespace: pod.namespace, podName: pod.name, podUid: pod.uid, nodeName };
  try {
    return await chosenTerms(client, taskQueue, facts, named, settings.pool);
  } catch (err) {
    if (!(err instanceof CniError)) throw err;
    preProduced.inc({ result: 'noPool' });
    const what =
      err.reason === 'invalid-static-address' ? 'its static addresses are refused' : 'no pool for the pod';
    log.info({ pod: `${pod.namespace}/${pod.name}`, reason: err.message }, `not pre-produced: ${what}`);
    return undefined;
  }
}

/** How the pre-producer starts a lease: joins one running (a racing ADD, an earlier agent), never restarts a closed one. */
const startOnce = (taskQueue: string, start: LeaseStart) => ({
  ...leaseStartOptions(taskQueue, start),
  workflowIdConflictPolicy: 'USE_EXISTING' as const,
  workflowIdReusePolicy: 'REJECT_DUPLICATE' as const,
});

/**
 * The produced grant of a lease, held by this agent's offers: the lease knows (the `offer` update
 * waits for the addresses), and revokes the offer before it gives them back. With `taskQueue` the
 * update starts the lease too (update-with-start: the start and the offer in one workflow task);
 * a lease that ran and closed throws WorkflowExecutionAlreadyStartedError.
 */
export async function offerLease(
  client: Client,
  offers: OfferBook,
  start: LeaseStart,
  log: Log,
  taskQueue?: string,
): Promise<void> {
  const leaseId = leaseWorkflowId(start.podUid, start.ifName);
  const updateId = offerUpdateId(randomUUID());
  const offered = taskQueue
    ? client.workflow.executeUpdateWithStart(offerUpdate, {
        updateId,
        startWorkflowOperation: new WithStartWorkflowOperation(
          LEASE_WORKFLOW_TYPE,
          startOnce(taskQueue, start),
        ),
      })
    : client.workflow.getHandle(leaseId).executeUpdate(offerUpdate, { updateId });
  const accepted = await offered.catch((err: unknown) => {
    if (isUpdateRefusal(err) || isGoneError(err)) return undefined; // released, produce failed, or closed
    throw err;
  });
  if (!accepted) return log.info({ leaseId }, 'lease not offered: it ended first');
  // The lease's own start, which is the agent's unless an ADD of other terms started it first.
  const held = await offers.hold({ leaseId, ...accepted });
  log.info({ leaseId, held }, held ? 'lease offered to its first ADD' : 'offer revoked before it was held');
}

export function startPreProducing(options: PreProduceOptions): PreProducer {
  const { client, reader, nodeName, taskQueue, settings, offers, log = silentLog() } = options;
  const started = new Set<string>();

  /** Starts the lease once (and offers it); a lease that ran and closed is never started again here. */
  const produce = async (pod: PodFact) => {
    const terms = await guessedTerms(options, pod, log);
    if (terms === undefined) return;
    const start = leaseStartFor(pod, nodeName, settings, terms);
    const fields = {
      leaseId: leaseWorkflowId(start.podUid, start.ifName),
      pod: `${pod.namespace}/${pod.name}`,
    };
    try {
      if (offers) await offerLease(client, offers, start, log, taskQueue);
      else await client.workflow.start(LEASE_WORKFLOW_TYPE, startOnce(taskQueue, start));
      preProduced.inc({ result: 'started' });
      log.info(fields, 'lease pre-produced');
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      preProduced.inc({ result: 'closed' });
      log.info(fields, 'lease ran and closed: not pre-produced again');
    }
  };

  const handle = async (type: string, object: unknown) => {
    options.onPodEvent?.(type, object);
    const hint = PodSchema.safeParse(object);
    if (type === 'DELETED' || !hint.success) return;
    const fact = podFact(hint.data);
    if (started.has(fact.uid) || !shouldPreProduce(fact, nodeName)) return;
    if (!reader.newest.admit(fact.uid, fact.resourceVersion)) return;
    const pod = await reader.readPod(fact.namespace, fact.name); // quorum: is it really there?
    if (pod?.uid !== fact.uid || !shouldPreProduce(pod, nodeName) || started.has(pod.uid)) return;
    started.add(pod.uid); // before the awaits: the pod's next events must not start it twice
    await produce(pod).catch((err: unknown) => {
      started.delete(pod.uid); // its next event tries again
      throw err;
    });
  };

  const stopping = new AbortController();
  // The watch opens once the pool is served: its first events are then every pod bound meanwhile.
  const loop: Promise<WatchLoop | undefined> = untilPoolServed(
    client,
    taskQueue,
    settings.pool,
    log,
    stopping.signal,
  ).then((served) =>
    served
      ? watchForever(
          options.kube,
          '/api/v1/pods',
          handle,
          (err) => log.warn({ watch: 'pods', error: errorMessage(err) }, 'watch error; reopening'),
          { query: { fieldSelector: `spec.nodeName=${nodeName}` }, concurrency: PRE_PRODUCE_AT_ONCE },
        )
      : undefined,
  );
  return {
    started,
    stop: () => {
      stopping.abort();
      void loop.then((watch) => watch?.stop());
    },
  };
}

const POOL_CHECK_MAX_MS = 30_000;
/** Pods bound together (a Deployment scaled up) get their offers side by side. */
const PRE_PRODUCE_AT_ONCE = 4;

/**
 * A pool the control plane does not serve (not yet started, or a preProduce.pool that is no pool
 * of its config) would only make leases that fail: wait until it is served (without a
 * preProduce.pool: until any pool is), saying so. False: stopped.
 */
async function untilPoolServed(
  client: Client,
  taskQueue: string,
  pool: string | undefined,
  log: Log,
  stopped: AbortSignal,
): Promise<boolean> {
  const isServed = async () =>
    pool === undefined ? (await servedPools(client, taskQueue, true)).length > 0 : poolIsServed(client, pool);
  for (let waitMs = 1000; !stopped.aborted; waitMs = Math.min(waitMs * 2, POOL_CHECK_MAX_MS)) {
    const served = await isServed().catch((err: unknown) => {
      log.warn({ pool, error: errorMessage(err) }, 'preProduce: cannot ask whether the pool is served');
      return false;
    });
    if (served) return true;
    preProduced.inc({ result: 'unservedPool' });
    log.warn(
      { pool, retryInMs: waitMs },
      'preProduce.pool is not served by the control plane: nothing pre-produced yet',
    );
    await sleep(waitMs, undefined, { signal: stopped }).catch(() => undefined);
  }
  return false;
}
