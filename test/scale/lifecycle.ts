// A pod's life on a simulated node, through the real kube-apiserver and the Temporal calls the node
// agent makes for the shim: created and bound (bench pod-ops), ADD (cni/consume: update-with-start,
// the lease produces, consumes and has the node's simulated agent activate it), status Running (the
// control worker's watch confirms it), deleted gracefully, DEL (cni/deactivate), removed (the
// control worker releases the lease, which returns its addresses and completes Released).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { consumeLease } from '../../cni/consume';
import { deactivateAttachment } from '../../cni/deactivate';
import { leaseWorkflowId } from '../../domain/ids';
import { termsOf, type LeaseStart } from '../../domain/lease';
import type { BenchPod } from '../bench/plugins';
import type { PodOps } from '../bench/pod-ops';

export const NETWORK = 'scale';
const IF_NAME = 'eth0';
/** The kubelet retries a failed ADD; a few tries, a second apart, before the lifecycle fails. */
const ADD_ATTEMPTS = 5;
const ADD_RETRY_MS = 1000;

export interface ScalePod extends BenchPod {
  node: string;
}

export interface Lifecycles {
  /** ADDs answered with an error and tried again. */
  addRetries: number;
}

export interface LeaseTarget {
  client: Client;
  taskQueue: string;
  pool: string;
}

export const leaseIdOf = (pod: ScalePod): string => leaseWorkflowId(pod.uid, IF_NAME);

function startOf(pod: ScalePod, pool: string): LeaseStart {
  return {
    podUid: pod.uid,
    podNamespace: pod.namespace,
    podName: pod.name,
    ifName: IF_NAME,
    nodeName: pod.node,
    pool,
    mode: 'ptp',
    network: NETWORK,
  };
}

/** The shim's ADD as the agent makes it, retried as the kubelet retries. */
async function add(target: LeaseTarget, pod: ScalePod, counts: Lifecycles): Promise<void> {
  const start = startOf(pod, target.pool);
  const request = { containerId: pod.containerId, netns: pod.netns, ifName: IF_NAME, terms: termsOf(start) };
  for (let attempt = 1; ; attempt++) {
    try {
      await consumeLease(target.client, target.taskQueue, start, request);
      return;
    } catch (err) {
      if (attempt >= ADD_ATTEMPTS) throw err;
      counts.addRetries++;
      await sleep(ADD_RETRY_MS); // the kubelet's back-off before its next ADD
    }
  }
}

/** Created, bound to `node`, ADD, Running: the pod holds an open lease afterwards. */
export async function admit(
  target: LeaseTarget,
  ops: PodOps,
  node: string,
  counts: Lifecycles,
): Promise<ScalePod> {
  const pod = { ...(await ops.createBound(node)), node };
  await add(target, pod, counts);
  await ops.markRunning(pod);
  return pod;
}

/** Deleted gracefully, DEL, removed: the control worker releases the lease from here. */
export async function retire(target: LeaseTarget, ops: PodOps, pod: ScalePod): Promise<void> {
  await ops.deleteGracefully(pod);
  await deactivateAttachment(target.client, leaseIdOf(pod), pod.containerId, IF_NAME);
  await ops.remove(pod);
}
