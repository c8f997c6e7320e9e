// The control worker's pod and node watches. With several replicas one runs them at a time (the
// holder of a coordination.k8s.io Lease): every replica handling every pod event did the same
// quorum reads, queries and signals N times. Correctness never rested on it (every message a
// watch sends follows a quorum read, each signal idempotent), so two holders for a moment cost only
// duplicate work. A new holder triggers a reconcile run: events no replica watched are caught.
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Client } from '@temporalio/client';
import type { KubernetesConfig, WatchLeadership } from '../../../domain/config';
import { watchLeaseName } from '../../../domain/ids';
import type { ClusterReader } from '../../../kubernetes/cluster-reader';
import type { KubeClients } from '../../../kubernetes/kube';
import { holdLeadership } from '../../../kubernetes/leadership';
import { watchForever, type WatchLoop } from '../../../kubernetes/watch-loop';
import { errorMessage, type Log } from '../../../observability/log';
import { triggerReconcile } from '../reconcile-schedule';
import { NodeEvents } from './node-events';
import { PodEvents } from './pod-events';

export interface Watches {
  stop(): Promise<void>;
}

export interface WatchSite {
  kube: KubeClients;
  reader: ClusterReader;
  client: Client;
  taskQueue: string;
  settings: KubernetesConfig;
  log: Log;
}

export function startWatches(site: WatchSite): Watches {
  const lead = () => {
    triggerReconcile(site.client, site.taskQueue).catch((err: unknown) =>
      site.log.warn({ error: errorMessage(err) }, 'reconcile trigger failed; the schedule still runs'),
    );
    return watchPodsAndNodes(site);
  };
  const leadership = site.settings.watchLeadership;
  if (leadership === false) {
    const stop = lead();
    return { stop: async () => stop() };
  }
  const held = holdLeadership(site.kube, leaseOf(site.taskQueue, leadership), {
    lead,
    changed: (leading, why) =>
      site.log.info({ leading, why }, leading ? 'watching pods and nodes' : 'stopped watching'),
    error: (err) =>
      site.log.warn({ error: errorMessage(err) }, 'watch leadership: Lease read or write refused'),
  });
  return { stop: () => held.stop() };
}

function watchPodsAndNodes({ kube, reader, client, taskQueue, settings, log }: WatchSite): () => void {
  const pods = new PodEvents(reader, client, taskQueue, settings.podInterfaces);
  const nodes = new NodeEvents(reader, client, taskQueue);
  const options = { concurrency: settings.watchConcurrency };
  const reportFor = (resource: string) => (err: unknown) =>
    log.warn({ watch: resource, error: errorMessage(err) }, 'watch error; reopening');
  const loops: WatchLoop[] = [
    watchForever(kube, '/api/v1/nodes', (t, o) => nodes.handle(t, o), reportFor('nodes'), options),
    watchForever(kube, '/api/v1/pods', (t, o) => pods.handle(t, o), reportFor('pods'), options),
  ];
  return () => loops.forEach((loop) => loop.stop());
}

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** One Lease per control task queue; the contender is the pod (its host name) and the process. */
function leaseOf(taskQueue: string, settings: WatchLeadership) {
  const namespace =
    settings.namespace ??
    (existsSync(SERVICE_ACCOUNT_NAMESPACE)
      ? readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim()
      : 'default');
  return {
    namespace,
    name: watchLeaseName(taskQueue),
    identity: `${hostname()}-${process.pid}`,
    durationSeconds: settings.durationSeconds,
  };
}
