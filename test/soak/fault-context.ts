// What every fault works with: the stack, the workload, chance, and the checker's ear (what an
// operator did on purpose, and what a fault saw go wrong).
import type { Finding } from './checker';
import type { FaultKind } from './options';
import type { Random } from './random';
import type { SoakNode, SoakStack } from './stack';
import type { Workload } from './workload';

export interface FaultRecord {
  kind: FaultKind;
  target: string;
  /** ms since the run began: injected, and recovered (the part restarted). */
  at: number;
  recoveredAt: number;
  /** ms from recovery to the first sample where every invariant holds; undefined: never. */
  convergedMs?: number;
  /** The fault injected beside this one (a pair). */
  with?: FaultKind;
  /** Why it could not be injected as planned. */
  error?: string;
}

/** A fault to inject, with the node it targets (node faults). */
export interface FaultPlan {
  kind: FaultKind;
  node?: SoakNode;
}

/** What the checker is told by the faults. */
export interface CheckerEar {
  /** The operator closes runs of this workflow on purpose from now on (terminate, reset). */
  operatorCloses(workflowId: string): void;
  /** Soft findings about `subject` are not violations for `ms` more (an operator's action). */
  grace(subject: string, ms: number): void;
  /** A violation a fault saw itself (an operator action not handled as documented). */
  violation(finding: Finding): void;
}

export interface FaultContext {
  stack: SoakStack;
  workload: Workload;
  random: Random;
  checker: CheckerEar;
}

export const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits for `predicate` up to `timeoutMs`, checking every 100 ms; whether it held. */
export async function until(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) return false;
    await pause(100);
  }
  return true;
}
