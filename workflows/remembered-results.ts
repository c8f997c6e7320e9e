// Update ids are de-duplicated by the server per run only. Workflows that continue-as-new carry
// this bounded id → result map so a repeated update gets the answer it got the first time.
import { currentUpdateInfo } from '@temporalio/workflow';

export type RememberedResults = Array<[string, unknown]>;

const LIMIT = 2000;

export class ResultMemory {
  private readonly results: Map<string, unknown>;

  constructor(carried: RememberedResults = []) {
    this.results = new Map(carried);
  }

  /**
   * Runs `compute` once per id (default: the current update's id, else the id of one operation
   * of a batch); later calls with the same id get the first answer.
   */
  async once<T>(compute: () => Promise<T> | T, id = currentUpdateInfo()?.id): Promise<T> {
    if (id !== undefined && this.results.has(id)) return this.results.get(id) as T;
    const result = await compute();
    if (id !== undefined) {
      this.results.set(id, result);
      if (this.results.size > LIMIT) {
        const oldest = this.results.keys().next();
        if (!oldest.done) this.results.delete(oldest.value);
      }
    }
    return result;
  }

  /** Forgets the answers whose id starts with `prefix`: the next call computes them again. */
  forget(prefix: string): void {
    for (const id of [...this.results.keys()]) if (id.startsWith(prefix)) this.results.delete(id);
  }

  /** Forgets the answers `matches` picks (a pool's hand-outs of a block a rebuild gave back). */
  forgetWhere(matches: (id: string, result: unknown) => boolean): void {
    for (const [id, result] of [...this.results]) if (matches(id, result)) this.results.delete(id);
  }

  carry(): RememberedResults {
    return [...this.results];
  }
}
