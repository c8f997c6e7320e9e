// The soak's faults by kind (options.ts): what each holds while under way, so two injected at once
// never work the same part (two faults may overlap: they never restart the same process or cut the
// same link), which node it may hit, and the function that injects it.
import type { FaultContext, FaultPlan } from './fault-context';
import { NodeFaults } from './node-faults';
import { Operator } from './operator';
import type { FaultKind } from './options';
import { PausePoints } from './pause-points';
import { ProcessFaults } from './process-faults';
import type { SoakNode } from './stack';

export type { FaultRecord, FaultPlan } from './fault-context';

/** Which nodes a node fault may hit; undefined: the fault has no node. */
const NODE_CHOICE: Partial<Record<FaultKind, (node: SoakNode) => boolean>> = {
  'kill-agent': () => true,
  'kill-agent-mid-activation': (n) => n.mode === 'ptp',
  'node-replaced': () => true,
  'node-deleted': () => true,
  'damage-agent-files': () => true,
  'node-reregistered': () => true,
  'node-moved': () => true,
  'sigstop-agent': () => true,
  'cut-agent-temporal': () => true,
  'pause-offer-written': (n) => n.preProduce,
  'pause-offer-revoked': (n) => n.preProduce,
  'pause-compensation': () => true,
  'operator-terminate': () => true,
  'operator-reset': () => true,
  'operator-signals': () => true,
  'operator-cancel': () => true,
};

/** The parts (besides its node) a fault works while under way. */
const PARTS: Record<FaultKind, string[]> = {
  'kill-control': ['control'],
  'kill-agent': [],
  'kill-agent-mid-activation': [],
  'restart-temporal': ['temporal'],
  'restart-kube': ['kube'],
  'temporal-unreachable': ['temporal-links'],
  'node-replaced': [],
  'node-deleted': [],
  'damage-agent-files': [],
  'node-reregistered': [],
  'node-moved': [],
  'sigstop-control': ['control'],
  'sigstop-agent': [],
  'cut-agent-temporal': ['temporal-links'],
  'cut-control-kube': ['control-kube-link'],
  'pause-offer-written': [],
  'pause-offer-revoked': [],
  'pause-compensation': ['control'],
  'pause-continue-as-new': ['control'],
  'operator-terminate': ['operator'],
  'operator-reset': ['operator'],
  'operator-signals': ['operator'],
  'operator-cancel': ['operator'],
  'pool-config-change': ['operator', 'control'],
};

/** What a planned fault holds. */
export const partsOf = (plan: FaultPlan): string[] => [
  ...PARTS[plan.kind],
  ...(plan.node ? [`node:${plan.node.name}`] : []),
];

/** The fault on a node it may hit that no fault under way holds; undefined when there is none. */
export function planFault(
  kind: FaultKind,
  nodes: SoakNode[],
  busy: Set<string>,
  pick: <T>(items: readonly T[]) => T,
): FaultPlan | undefined {
  if (PARTS[kind].some((part) => busy.has(part))) return undefined;
  const choice = NODE_CHOICE[kind];
  if (!choice) return { kind };
  const free = nodes.filter((n) => choice(n) && !busy.has(`node:${n.name}`));
  return free.length ? { kind, node: pick(free) } : undefined;
}

export class Faults {
  private readonly processes: ProcessFaults;
  private readonly nodeFaults: NodeFaults;
  private readonly pauses: PausePoints;
  private readonly operator: Operator;

  constructor(private readonly ctx: FaultContext) {
    this.processes = new ProcessFaults(ctx);
    this.nodeFaults = new NodeFaults(ctx);
    this.pauses = new PausePoints(ctx, this.nodeFaults);
    this.operator = new Operator(ctx);
  }

  /** Injects one fault and returns once the faulted part is back; names what it hit. */
  inject({ kind, node }: FaultPlan): Promise<string> {
    const on = (fault: (n: SoakNode) => Promise<string>) => {
      if (!node) throw new Error(`${kind} needs a node`);
      return fault(node);
    };
    const { processes, nodeFaults, pauses, operator, ctx } = this;
    switch (kind) {
      case 'kill-control':
        return processes.killControl();
      case 'kill-agent':
        return on((n) => processes.killAgent(n));
      case 'kill-agent-mid-activation':
        return on((n) => processes.killAgentMidActivation(n));
      case 'restart-temporal':
        return processes.restartTemporal();
      case 'restart-kube':
        return processes.restartKube();
      case 'temporal-unreachable':
        return processes.temporalUnreachable();
      case 'node-replaced':
        return on((n) => nodeFaults.replaceWithPods(n, ctx.random.int(500, 3000)));
      case 'node-deleted':
        return on((n) => nodeFaults.replaceWithPods(n, ctx.random.int(5000, 10_000)));
      case 'damage-agent-files':
        return on((n) => processes.damageAgentFiles(n));
      case 'node-reregistered':
        return on((n) => nodeFaults.reregister(n));
      case 'node-moved':
        return on((n) => nodeFaults.move(n));
      case 'sigstop-control':
        return processes.sigstopControl();
      case 'sigstop-agent':
        return on((n) => processes.sigstopAgent(n));
      case 'cut-agent-temporal':
        return on((n) => processes.cutAgentTemporal(n));
      case 'cut-control-kube':
        return processes.cutControlKube();
      case 'pause-offer-written':
        return on((n) => pauses.offerWritten(n));
      case 'pause-offer-revoked':
        return on((n) => pauses.offerRevoked(n));
      case 'pause-compensation':
        return on((n) => pauses.compensation(n));
      case 'pause-continue-as-new':
        return pauses.continueAsNew();
      case 'operator-terminate':
        return on((n) => operator.terminate(n));
      case 'operator-reset':
        return on((n) => operator.reset(n));
      case 'operator-signals':
        return on((n) => operator.signals(n));
      case 'operator-cancel':
        return on((n) => operator.cancel(n));
      case 'pool-config-change':
        return operator.poolConfigChange();
    }
  }
}
