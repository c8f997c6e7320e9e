// What every concern of node/<nodeName> shares in one run: its input, the state it carries
// across continue-as-new, and whether this run's history is long enough to continue.
import { emptyTable, type AllocationTable } from '../../domain/allocation';
import { historyGauge } from '../continue-as-new';
import type { NodeInput, NodeState } from '../node-messages';

const initialState = (): NodeState => ({
  incarnation: '',
  retired: {},
  past: [],
  pools: {},
  tables: {},
  blockRequests: 0,
  releasedRuns: [],
  results: [],
});

export class NodeRun {
  readonly state: NodeState;
  private readonly historyLong: () => boolean;

  constructor(readonly input: NodeInput) {
    this.state = input.state ?? initialState();
    this.historyLong = historyGauge(input.historyLimit);
  }

  get nodeName(): string {
    return this.input.nodeName;
  }

  tableOf(pool: string): AllocationTable {
    return (this.state.tables[pool] ??= emptyTable());
  }

  historyFull(): boolean {
    return this.historyLong();
  }
}
