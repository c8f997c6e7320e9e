// The soak's faults, each a named function: processes SIGKILLed (the control worker; a node
// agent, also mid-activation at the dataplane's test-only pause point), servers restarted with
// their state kept (Temporal, etcd + kube-apiserver), Temporal unreachable for seconds (the
// proxy cut), a node replaced under the same name or deleted with pods on it (the pod GC's
// force-deletions done here), and an agent's disk files damaged before it restarts.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PAUSE_ENV } from '../../kernel/failpoint';
import type { FaultKind } from './options';
import type { Random } from './random';
import type { SoakNode, SoakStack } from './stack';
import { SOAK_NAMESPACE, type Workload } from './workload';

export interface FaultRecord {
  kind: FaultKind;
  target: string;
  /** ms since the run began: injected, and recovered (the part restarted). */
  at: number;
  recoveredAt: number;
  /** ms from recovery to the first sample where every invariant holds; undefined: never. */
  convergedMs?: number;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits for `predicate` up to `timeoutMs`, checking every 100 ms. */
async function until(predicate: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) return false;
    await pause(100);
  }
  return true;
}

export class Faults {
  constructor(
    private readonly stack: SoakStack,
    private readonly workload: Workload,
    private readonly random: Random,
  ) {}

  /** Injects one fault and returns once the faulted part is back; names what it hit. */
  async inject(kind: FaultKind): Promise<string> {
    switch (kind) {
      case 'kill-control':
        return this.killControl();
      case 'kill-agent':
        return this.killAgent(this.random.pick(this.stack.nodes));
      case 'kill-agent-mid-activation':
        return this.killAgentMidActivation(
          this.random.pick(this.stack.nodes.filter((n) => n.mode === 'ptp')),
        );
      case 'restart-temporal':
        return this.restartTemporal();
      case 'restart-kube':
        return this.restartKube();
      case 'temporal-unreachable':
        return this.temporalUnreachable();
      case 'node-replaced':
        return this.replaceNode(this.random.pick(this.stack.nodes), this.random.int(500, 3000));
      case 'node-deleted':
        return this.replaceNode(this.random.pick(this.stack.nodes), this.random.int(5000, 10_000));
      case 'damage-agent-files':
        return this.damageAgentFiles(this.random.pick(this.stack.nodes));
    }
  }

  private async killControl(): Promise<string> {
    await this.stack.killControl();
    await pause(this.random.int(500, 3000));
    await this.stack.startControl();
    return 'control worker';
  }

  private async killAgent(node: SoakNode): Promise<string> {
    await this.stack.killAgent(node);
    await pause(this.random.int(500, 3000));
    await this.stack.startAgent(node);
    return node.name;
  }

  /** The agent is restarted with the pause point set, killed once an activation stops there. */
  private async killAgentMidActivation(node: SoakNode): Promise<string> {
    await this.stack.killAgent(node);
    await this.stack.startAgent(node, { [PAUSE_ENV]: 'veth-created' });
    const paused = await until(() => node.agentOutput.includes('paused after veth-created'), 30_000);
    await this.stack.killAgent(node);
    await this.stack.startAgent(node);
    return `${node.name}${paused ? ' (mid-activation)' : ' (no activation came within 30 s)'}`;
  }

  private async restartTemporal(): Promise<string> {
    await this.stack.stopTemporal();
    await this.stack.startTemporal();
    return 'temporal dev server';
  }

  private async restartKube(): Promise<string> {
    await this.stack.stopKube();
    await this.stack.startKube();
    return 'etcd + kube-apiserver';
  }

  private async temporalUnreachable(): Promise<string> {
    const ms = this.random.int(2000, 6000);
    await this.stack.proxy.cut();
    await pause(ms);
    await this.stack.proxy.restore();
    return `${ms} ms`;
  }

  /**
   * The machine goes (agent, host namespace, disk), the Node object is deleted and the pods bound
   * to it are force-deleted (the pod GC's part); after `awayMs` a new machine registers under the
   * same name (a new UID). A long `awayMs` is a node deletion that stands for a while.
   */
  private async replaceNode(node: SoakNode, awayMs: number): Promise<string> {
    this.workload.machineGone(node);
    await this.stack.removeMachine(node);
    const { core } = this.stack.kubeClients;
    await core.deleteNode({ name: node.name, gracePeriodSeconds: 0 });
    const pods = await core.listNamespacedPod({
      namespace: SOAK_NAMESPACE,
      fieldSelector: `spec.nodeName=${node.name}`,
    });
    for (const pod of pods.items) {
      const name = pod.metadata?.name ?? '';
      await core
        .deleteNamespacedPod({ name, namespace: SOAK_NAMESPACE, gracePeriodSeconds: 0 })
        .catch(() => undefined);
      await this.workload.clearFinalizer(name, pod.metadata?.uid ?? '');
    }
    await pause(awayMs);
    await this.stack.addNode(node);
    this.workload.machineBack(node);
    return `${node.name} (${pods.items.length} pods, away ${awayMs} ms)`;
  }

  /** Garbage in the agent's DEL queue and offer directory, then the agent restarted to read them. */
  private async damageAgentFiles(node: SoakNode): Promise<string> {
    const queue = (node.netconf() as { deleteQueue: string }).deleteQueue;
    const offers = join(node.dir, 'offers');
    for (const dir of [queue, offers]) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `damaged-${Date.now()}.json`), '{"not": json');
      writeFileSync(join(dir, `empty-${Date.now()}.json`), '');
      mkdirSync(join(dir, `a-directory-${Date.now()}.json`), { recursive: true });
    }
    await this.stack.killAgent(node);
    await this.stack.startAgent(node);
    return node.name;
  }
}
