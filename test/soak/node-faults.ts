// Faults of a node: its Node object deleted and registered again under the same name (a new UID).
// With the pods (the machine went, the pod GC force-deleted the pods bound to it: `node-replaced`
// comes back within seconds, `node-deleted` stands for a while) or keeping them: the same machine
// whose kubelet registers again (`node-reregistered`: nothing else changes), or a new machine
// whose kubelet runs every living pod again in a new sandbox (`node-moved`). Release follows the
// pod: a kept pod keeps its lease and addresses, and its new sandbox's ADD answers them again.
import { ip } from '../../kernel/ip';
import { pause, until, type FaultContext } from './fault-context';
import type { SoakNode } from './stack';

/** What the new machine's set-up (agent, host namespace) takes beyond the absence, with room. */
const MOVE_MARGIN_MS = 10_000;

export class NodeFaults {
  constructor(private readonly ctx: FaultContext) {}

  /** The machine and its pods gone; after `awayMs` a new machine registers under the name. */
  async replaceWithPods(node: SoakNode, awayMs: number): Promise<string> {
    const { stack, workload } = this.ctx;
    workload.machineGone(node, false);
    await stack.removeMachine(node);
    await stack.deleteNode(node);
    const pods = await workload.pods.list(node.name);
    for (const pod of pods) {
      await workload.pods.forceRemove(pod.name, pod.uid);
      workload.removed(pod.uid);
    }
    await pause(awayMs);
    await stack.addNode(node);
    workload.machineBack(node);
    return `${node.name} (${pods.length} pods, away ${awayMs} ms)`;
  }

  /** The same machine: only the Node object goes and comes back (a kubelet that registers again). */
  async reregister(node: SoakNode): Promise<string> {
    const awayMs = this.ctx.random.int(200, 5000);
    const pods = await this.ctx.workload.pods.list(node.name);
    await this.ctx.stack.deleteNode(node);
    await pause(awayMs);
    await this.ctx.stack.registerNode(node);
    return `${node.name} (${pods.length} pods kept, away ${awayMs} ms)`;
  }

  /**
   * A new machine takes the name: the old one goes (agent, host namespace, disk, sandboxes), the
   * Node is deleted and registered again, and the new kubelet runs each living pod again.
   */
  async move(node: SoakNode): Promise<string> {
    const { stack, workload } = this.ctx;
    // Pods that were told their addresses are what the new kubelet runs again: wait for one that
    // outlives the machine's absence (a pod deleted meanwhile is not run again), and keep the
    // absence shorter than its life (the set-up of the new machine takes a few seconds more).
    await until(() => workload.lifeLeftOn(node) >= MOVE_MARGIN_MS + 500, 60_000);
    const longest = Math.min(8000, workload.lifeLeftOn(node) - MOVE_MARGIN_MS);
    const awayMs = this.ctx.random.int(500, Math.max(500, longest));
    const sandboxes = workload.machineGone(node, true);
    await stack.removeMachine(node);
    for (const netns of sandboxes) await ip(undefined, ['netns', 'del', netns]).catch(() => undefined);
    await stack.deleteNode(node);
    const pods = await workload.pods.list(node.name);
    await pause(awayMs);
    await stack.registerNode(node);
    await stack.newMachine(node);
    workload.machineBack(node);
    return `${node.name} (${pods.length} pods kept, ${sandboxes.length} sandboxes run again, away ${awayMs} ms)`;
  }
}
