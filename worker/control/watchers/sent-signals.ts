// What the watcher already sent each lease run. A signal Temporal accepted is in the run's history
// whether or not the run has handled it yet, but a describe shows its phase only after that
// workflow task: a pod's next event, handled a few milliseconds after the last one (the kubelet's
// terminal status, then the deletion), would read the old phase and send the same message again.
// Keyed by run id, so a lease started again (a new run) is told afresh. Bounded: the window that
// matters is a workflow task, and the oldest runs are forgotten first.

export type SentAction = 'release' | 'confirmRunning';

export class SentSignals {
  private readonly sent = new Map<string, Set<SentAction>>();

  constructor(private readonly capacity = 50_000) {}

  has(runId: string, action: SentAction): boolean {
    return this.sent.get(runId)?.has(action) ?? false;
  }

  add(runId: string, action: SentAction): void {
    const actions = this.sent.get(runId) ?? new Set<SentAction>();
    actions.add(action);
    this.sent.delete(runId); // re-inserted: the newest
    this.sent.set(runId, actions);
    if (this.sent.size > this.capacity) {
      const oldest = this.sent.keys().next();
      if (!oldest.done) this.sent.delete(oldest.value);
    }
  }
}
