// Pre-produced leases: the node agent watches the pods bound to its node and starts each one's
// lease (produce: addresses reserved) as soon as it is bound, before the runtime calls ADD; the
// ADD then joins the running workflow. The watch opens without a resourceVersion, so its first
// events are a quorum snapshot of the node's pods; every later hint is verified by a quorum read
// before anything is reserved (seed 002). The reservation is bound to the pod UID (seed 003), and
// a pod deleted before its ADD is released by the control plane's usual verified path.
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { PreProduce } from '../domain/config';
import { shouldPreProduce } from '../domain/cluster-decisions';
import { PodSchema, podFact, type PodFact } from '../domain/k8s';
import type { LeaseStart } from '../domain/lease';
import { LEASE_WORKFLOW_TYPE } from '../workflows/lease-messages';
import type { ClusterReader } from '../kubernetes/cluster-reader';
import type { KubeClients } from '../kubernetes/kube';
import { leaseStartOptions } from '../temporal/leases';
import { preProduced } from '../observability/agent-metrics';
import { errorMessage, silentLog, type Log } from '../observability/log';
import { watchForever, type WatchLoop } from './watchers/watch-loop';

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
  log?: Log;
}

const leaseStartFor = (pod: PodFact, nodeName: string, settings: PreProduce): LeaseStart => ({
  podUid: pod.uid,
  podNamespace: pod.namespace,
  podName: pod.name,
  ifName: settings.ifName,
  nodeName,
  pool: settings.pool,
  mode: settings.mode,
  network: settings.network,
});

export function startPreProducing(options: PreProduceOptions): PreProducer {
  const { client, reader, nodeName, taskQueue, settings, log = silentLog() } = options;
  const started = new Set<string>();

  /** Starts the lease once; a lease that ran and closed (released) is never started again here. */
  const produce = async (pod: PodFact) => {
    const options = leaseStartOptions(taskQueue, leaseStartFor(pod, nodeName, settings));
    const fields = { leaseId: options.workflowId, pod: `${pod.namespace}/${pod.name}` };
    try {
      // USE_EXISTING: a lease already running (a racing ADD, an earlier agent) is joined, not restarted.
      await client.workflow.start(LEASE_WORKFLOW_TYPE, {
        ...options,
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
      });
      preProduced.inc({ result: 'started' });
      log.info(fields, 'lease pre-produced');
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      preProduced.inc({ result: 'closed' });
      log.info(fields, 'lease ran and closed: not pre-produced again');
    }
    started.add(pod.uid);
  };

  const handle = async (type: string, object: unknown) => {
    const hint = PodSchema.safeParse(object);
    if (type === 'DELETED' || !hint.success) return;
    const fact = podFact(hint.data);
    if (started.has(fact.uid) || !shouldPreProduce(fact, nodeName)) return;
    if (!reader.newest.admit(fact.uid, fact.resourceVersion)) return;
    const pod = await reader.readPod(fact.namespace, fact.name); // quorum: is it really there?
    if (pod?.uid === fact.uid && shouldPreProduce(pod, nodeName)) await produce(pod);
  };

  const loop: WatchLoop = watchForever(
    options.kube,
    '/api/v1/pods',
    handle,
    (err) => log.warn({ watch: 'pods', error: errorMessage(err) }, 'watch error; reopening'),
    { fieldSelector: `spec.nodeName=${nodeName}` },
  );
  return { started, stop: () => loop.stop() };
}
