// The runtime's CNI calls for the soak's pods, through the real shim: ADD, a repeated ADD (its
// answer compared), DEL until it succeeds, a DEL without an ADD; errors counted by CNI code.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { runShim, type ShimCall, type ShimOutcome } from '../harness/shim';
import type { Random } from './random';
import type { SoakNode } from './stack';
import type { WorkloadStats } from './workload';

/** A pod's sandbox on one of its node's machines. */
export interface Sandbox {
  netns: string;
  containerId: string;
  /** The node's machine it was made on. */
  machine: number;
}

export type PodCall = Omit<ShimCall, 'stdin' | 'command'>;

const CniResultSchema = z.object({ ips: z.array(z.object({ address: z.string() })).default([]) });
const CniErrorSchema = z.object({ code: z.number(), msg: z.string().optional() });

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const count = (into: Record<string, number>, key: string) => (into[key] = (into[key] ?? 0) + 1);
const addressesOf = (outcome: ShimOutcome) =>
  CniResultSchema.parse(outcome.json).ips.map((i) => i.address.split('/')[0] ?? '');
export const sameAddresses = (a: string[], b: string[]) => [...a].sort().join() === [...b].sort().join();

export class CniRuntime {
  constructor(
    private readonly stats: WorkloadStats,
    private readonly random: Random,
  ) {}

  private shim(call: ShimCall['command'], pod: PodCall, node: SoakNode) {
    return runShim({ ...pod, command: call, stdin: node.netconf() });
  }

  /** One ADD: the addresses answered, or undefined after an error (counted). */
  async add(pod: PodCall, node: SoakNode): Promise<string[] | undefined> {
    this.stats.adds++;
    const outcome = await this.shim('ADD', pod, node);
    if (outcome.exitCode === 0) return addressesOf(outcome);
    this.countError(this.stats.addErrors, 'ADD', outcome);
    return undefined;
  }

  /** The same ADD again: the same answer, or a broken promise; an error is the runtime's to retry. */
  async repeatAdd(pod: PodCall, node: SoakNode, told: string[]): Promise<string[] | undefined> {
    this.stats.repeatedAdds++;
    const outcome = await this.shim('ADD', pod, node);
    if (outcome.exitCode !== 0) return undefined;
    const again = addressesOf(outcome);
    if (!sameAddresses(again, told))
      this.stats.broken.push(
        `repeated ADD of ${pod.containerId} answered ${again.join()} after ${told.join()}`,
      );
    return again;
  }

  async delWithoutAdd(pod: PodCall, node: SoakNode): Promise<void> {
    this.stats.delsWithoutAdd++;
    await this.del({ ...pod, containerId: `ctr-${randomBytes(6).toString('hex')}` }, node);
  }

  /** DEL until it succeeds (it must: a DEL that cannot reach Temporal is queued); whether it did. */
  async del(pod: PodCall, node: SoakNode): Promise<boolean> {
    for (let attempt = 1; attempt <= 5; attempt++) {
      this.stats.dels++;
      const outcome = await this.shim('DEL', pod, node);
      if (outcome.exitCode === 0) return true;
      this.countError(this.stats.delErrors, 'DEL', outcome);
      await pause(this.random.int(800, 1200));
    }
    this.stats.broken.push(`DEL of ${pod.containerId} on ${node.name} failed 5 times`);
    return false;
  }

  private countError(into: Record<string, number>, verb: string, outcome: ShimOutcome): void {
    const error = CniErrorSchema.safeParse(outcome.json);
    const key = error.success ? String(error.data.code) : `exit ${outcome.exitCode}`;
    count(into, key);
    const reason = error.success ? /^([a-z-]+):/.exec(error.data.msg ?? '')?.[1] : undefined;
    count(this.stats.errorReasons, `${verb} ${key} ${reason ?? 'unnamed'}`);
    const samples = (this.stats.errorSamples[`${verb} ${key}`] ??= []);
    if (samples.length < 3)
      samples.push(error.success ? (error.data.msg ?? '') : outcome.stderr.slice(0, 300));
  }
}
