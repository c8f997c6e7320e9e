// The soak's workload: pods created, bound and deleted at a steady rate on every node, and the
// CNI calls a runtime makes for them through the real shim: ADD (retried after an error, as the
// kubelet does, and sometimes repeated), DEL (sometimes repeated, sometimes without an ADD
// before it), in ptp and ipam mode, with and without pre-produce. Deletions are graceful, grace 0
// or held by a finalizer; some pods never become Running; some names come back with a new UID,
// as a StatefulSet does. The ledger is what the runtime was told: the checker's "nothing lost".
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { ip } from '../../kernel/ip';
import { runShim, type ShimCall, type ShimOutcome } from '../harness/shim';
import type { Random } from './random';
import type { SoakNode, SoakStack } from './stack';

export const SOAK_NAMESPACE = 'soak';
const FINALIZER = 'netlease.soak/hold';
const ADD_DEADLINE_MS = 120_000;

/** A pod whose ADD succeeded and whose deletion has not begun: what its runtime was told. */
export interface Told {
  podUid: string;
  podName: string;
  node: string;
  mode: SoakNode['mode'];
  netns: string;
  addresses: string[];
}

export interface WorkloadStats {
  started: number;
  completed: number;
  abandoned: number;
  adds: number;
  addErrors: Record<string, number>;
  repeatedAdds: number;
  dels: number;
  delErrors: Record<string, number>;
  repeatedDels: number;
  delsWithoutAdd: number;
  neverRunning: number;
  recreatedNames: number;
  deletions: Record<'now' | 'graceful' | 'finalizer', number>;
  /** A repeated ADD that answered other addresses, or a DEL that failed for good. */
  broken: string[];
  /** The first few error messages per code, to read what the errors were. */
  errorSamples: Record<string, string[]>;
}

const CniResultSchema = z.object({ ips: z.array(z.object({ address: z.string() })).default([]) });
const CniErrorSchema = z.object({ code: z.number(), msg: z.string().optional() });

const emptyStats = (): WorkloadStats => ({
  started: 0,
  completed: 0,
  abandoned: 0,
  adds: 0,
  addErrors: {},
  repeatedAdds: 0,
  dels: 0,
  delErrors: {},
  repeatedDels: 0,
  delsWithoutAdd: 0,
  neverRunning: 0,
  recreatedNames: 0,
  deletions: { now: 0, graceful: 0, finalizer: 0 },
  broken: [],
  errorSamples: {},
});

/** A 4xx from the API (not found, conflict, invalid): not an outage to wait out. */
const isAnswer = (err: unknown) => {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'number' && code >= 400 && code < 500;
};

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const count = (into: Record<string, number>, key: string) => (into[key] = (into[key] ?? 0) + 1);

export class Workload {
  readonly stats = emptyStats();
  /** podUid → what its runtime was told. */
  readonly ledger = new Map<string, Told>();
  /** podUid → the sandbox namespace the runtime made, until it removes it. */
  readonly sandboxes = new Map<string, string>();
  /** Node name → its machine's generation: a replaced node's lifecycles are abandoned. */
  private readonly generations = new Map<string, number>();
  private readonly down = new Set<string>();
  private serial = 0;

  constructor(
    private readonly stack: SoakStack,
    private readonly random: Random,
  ) {}

  private get core() {
    return this.stack.kubeClients.core;
  }

  async createNamespace(): Promise<void> {
    await this.core.createNamespace({ body: { metadata: { name: SOAK_NAMESPACE } } });
  }

  /** The node's machine is going away: its lifecycles stop calling its runtime. */
  machineGone(node: SoakNode): void {
    this.generations.set(node.name, (this.generations.get(node.name) ?? 0) + 1);
    this.down.add(node.name);
    for (const [uid, told] of this.ledger) if (told.node === node.name) this.ledger.delete(uid);
  }

  machineBack(node: SoakNode): void {
    this.down.delete(node.name);
  }

  /** Runs lifecycles, `inFlight` at once, until `total` began or `goOn` says to stop. */
  async run(total: number, inFlight: number, goOn: () => boolean): Promise<void> {
    const lane = async () => {
      let again: string | undefined;
      while (this.stats.started < total && goOn()) {
        this.stats.started++;
        // A lifecycle cut by an error (its pod is deleted at the drain) fails the run, not the lane.
        again = await this.lifecycle(again).catch((err: unknown) => {
          this.stats.broken.push(`lifecycle failed: ${err instanceof Error ? err.message : String(err)}`);
          return undefined;
        });
      }
    };
    await Promise.all(Array.from({ length: inFlight }, lane));
  }

  /** Kubernetes calls are retried while the API restarts (a bounded wait); a 4xx is an answer. */
  private async kube<T>(what: string, call: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + 90_000;
    for (;;) {
      try {
        return await call();
      } catch (err) {
        if (isAnswer(err)) throw err;
        if (Date.now() > deadline) throw new Error(`${what}: no answer for 90 s: ${String(err)}`);
        await pause(500);
      }
    }
  }

  private shim(call: Omit<ShimCall, 'stdin'>, node: SoakNode) {
    return runShim({ ...call, stdin: node.netconf() });
  }

  /** One pod's life; returns its name when the next lifecycle of the lane should reuse it. */
  private async lifecycle(name?: string): Promise<string | undefined> {
    const up = this.stack.nodes.filter((n) => !this.down.has(n.name));
    if (up.length === 0) {
      await pause(500);
      return undefined;
    }
    const node = this.random.pick(up);
    const generation = this.generations.get(node.name) ?? 0;
    const gone = () => (this.generations.get(node.name) ?? 0) !== generation;
    const podName = name ?? `pod-${++this.serial}`;
    if (name) this.stats.recreatedNames++;
    const deletion = this.random.pick(['now', 'graceful', 'finalizer'] as const);
    const uid = await this.createPod(podName, node, deletion === 'finalizer').catch(() => undefined);
    if (!uid) return undefined; // the name is still Terminating, or the node went: next one
    const netns = `soakp-${randomBytes(5).toString('hex')}`;
    await ip(undefined, ['netns', 'add', netns]);
    this.sandboxes.set(uid, netns);
    const base = {
      netns: `/var/run/netns/${netns}`,
      ifName: 'eth0',
      args: { K8S_POD_NAMESPACE: SOAK_NAMESPACE, K8S_POD_NAME: podName, K8S_POD_UID: uid },
    };
    if (this.random.chance(0.05)) await this.delWithoutAdd(base, node);
    const containerId = `ctr-${randomBytes(6).toString('hex')}`;
    const addresses = await this.add({ ...base, containerId }, node, gone);
    if (addresses && !gone()) {
      this.ledger.set(uid, { podUid: uid, podName, node: node.name, mode: node.mode, netns, addresses });
      if (this.random.chance(0.2)) await this.repeatAdd({ ...base, containerId }, node, addresses);
      if (this.random.chance(0.85)) await this.setRunning(podName).catch(() => undefined);
      else this.stats.neverRunning++;
      await pause(this.random.int(200, 2000));
    }
    this.ledger.delete(uid);
    await this.teardown(podName, uid, deletion, { ...base, containerId }, node, gone);
    await ip(undefined, ['netns', 'del', netns]).catch(() => undefined);
    this.sandboxes.delete(uid);
    if (gone()) this.stats.abandoned++;
    else this.stats.completed++;
    return this.random.chance(0.15) ? podName : undefined;
  }

  /** A name still held by its previous pod (Terminating) is tried again, as a StatefulSet waits. */
  private async createPod(name: string, node: SoakNode, finalizer: boolean): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.createPodOnce(name, node, finalizer);
      } catch (err) {
        if ((err as { code?: unknown }).code !== 409 || attempt >= 30) throw err;
        await pause(1000);
      }
    }
  }

  private async createPodOnce(name: string, node: SoakNode, finalizer: boolean): Promise<string> {
    const pod = await this.kube('create pod', () =>
      this.core.createNamespacedPod({
        namespace: SOAK_NAMESPACE,
        body: {
          metadata: { name, finalizers: finalizer ? [FINALIZER] : undefined },
          spec: {
            nodeName: node.name,
            terminationGracePeriodSeconds: 1,
            containers: [{ name: 'c', image: 'registry.invalid/pause:1' }],
          },
        },
      }),
    );
    return pod.metadata?.uid ?? '';
  }

  /** ADD until it succeeds, the pod's machine goes, or the deadline (the kubelet retries). */
  private async add(
    call: Omit<ShimCall, 'stdin' | 'command'>,
    node: SoakNode,
    gone: () => boolean,
  ): Promise<string[] | undefined> {
    const deadline = Date.now() + ADD_DEADLINE_MS;
    while (!gone() && Date.now() < deadline) {
      this.stats.adds++;
      const outcome = await this.shim({ ...call, command: 'ADD' }, node);
      if (outcome.exitCode === 0) {
        const result = CniResultSchema.parse(outcome.json);
        return result.ips.map((i) => i.address.split('/')[0] ?? '');
      }
      this.countError(this.stats.addErrors, 'ADD', outcome);
      await pause(this.random.int(300, 1000));
    }
    return undefined;
  }

  private async repeatAdd(call: Omit<ShimCall, 'stdin' | 'command'>, node: SoakNode, told: string[]) {
    this.stats.repeatedAdds++;
    const outcome = await this.shim({ ...call, command: 'ADD' }, node);
    if (outcome.exitCode !== 0) return; // an error (Temporal away) is the runtime's to retry
    const again = CniResultSchema.parse(outcome.json).ips.map((i) => i.address.split('/')[0] ?? '');
    if ([...again].sort().join() !== [...told].sort().join())
      this.stats.broken.push(
        `repeated ADD of ${call.containerId} answered ${again.join()} after ${told.join()}`,
      );
  }

  private async delWithoutAdd(call: Omit<ShimCall, 'stdin' | 'command' | 'containerId'>, node: SoakNode) {
    this.stats.delsWithoutAdd++;
    await this.del({ ...call, containerId: `ctr-${randomBytes(6).toString('hex')}` }, node);
  }

  /** DEL until it succeeds (it must: a DEL that cannot reach Temporal is queued). */
  private async del(call: Omit<ShimCall, 'stdin' | 'command'>, node: SoakNode): Promise<void> {
    for (let attempt = 1; attempt <= 5; attempt++) {
      this.stats.dels++;
      const outcome = await this.shim({ ...call, command: 'DEL' }, node);
      if (outcome.exitCode === 0) return;
      this.countError(this.stats.delErrors, 'DEL', outcome);
      await pause(1000);
    }
    this.stats.broken.push(`DEL of ${call.containerId} on ${node.name} failed 5 times`);
  }

  private countError(into: Record<string, number>, verb: string, outcome: ShimOutcome): void {
    const error = CniErrorSchema.safeParse(outcome.json);
    const key = error.success ? String(error.data.code) : `exit ${outcome.exitCode}`;
    count(into, key);
    const samples = (this.stats.errorSamples[`${verb} ${key}`] ??= []);
    if (samples.length < 3)
      samples.push(error.success ? (error.data.msg ?? '') : outcome.stderr.slice(0, 300));
  }

  private async setRunning(name: string): Promise<void> {
    await this.kube('pod status', async () => {
      const pod = await this.core.readNamespacedPodStatus({ name, namespace: SOAK_NAMESPACE });
      pod.status = { ...pod.status, phase: 'Running' };
      await this.core.replaceNamespacedPodStatus({ name, namespace: SOAK_NAMESPACE, body: pod });
    });
  }

  /** The deletion as a cluster makes it, the runtime's DEL in its place (none if the machine went). */
  private async teardown(
    name: string,
    uid: string,
    deletion: 'now' | 'graceful' | 'finalizer',
    call: Omit<ShimCall, 'stdin' | 'command'>,
    node: SoakNode,
    gone: () => boolean,
  ): Promise<void> {
    this.stats.deletions[deletion]++;
    const remove = (grace: number | undefined) =>
      this.kube('delete pod', () =>
        this.core.deleteNamespacedPod({
          name,
          namespace: SOAK_NAMESPACE,
          body: { preconditions: { uid }, ...(grace === undefined ? {} : { gracePeriodSeconds: grace }) },
        }),
      ).catch((err: unknown) => {
        if (!isAnswer(err)) throw err; // gone already, or another pod of that name now
      });
    await remove(deletion === 'now' ? 0 : undefined);
    if (!gone()) {
      await this.del(call, node);
      if (this.random.chance(0.2)) {
        this.stats.repeatedDels++;
        await this.del(call, node);
      }
    }
    await remove(0);
    if (deletion === 'finalizer') await this.clearFinalizer(name, uid);
  }

  async clearFinalizer(name: string, uid: string): Promise<void> {
    const { kube } = this.stack.kubeClients;
    const patch = kube.setHeaderOptions('Content-Type', kube.PatchStrategy.JsonPatch);
    await this.kube('clear finalizer', () =>
      this.core.patchNamespacedPod(
        {
          name,
          namespace: SOAK_NAMESPACE,
          body: [
            { op: 'test', path: '/metadata/uid', value: uid },
            { op: 'replace', path: '/metadata/finalizers', value: [] },
          ],
        },
        patch,
      ),
    ).catch(() => undefined); // gone already, or another pod of that name now
  }
}
