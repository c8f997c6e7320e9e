// A node's incarnations (Kubernetes node UIDs): the current one, the retired ones still being
// compensated, and the past ones a stale event must never make current again.
import { log, setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import { NodeUID } from '../../domain/search-attributes';
import type { NodeRun } from './run';

/** Past incarnations remembered: a stale event names a recent one. */
const PAST_KEPT = 21;

export class Incarnations {
  constructor(private readonly run: NodeRun) {}

  /** A node UID seen by a quorum read: a new one retires the current incarnation. */
  observe(uid: string): void {
    const { state } = this.run;
    if (!uid || uid === state.incarnation || state.past.includes(uid)) return;
    if (state.incarnation !== '') this.retire(state.incarnation, `node replaced by incarnation ${uid}`);
    state.incarnation = uid;
    this.adopt(uid);
    upsertSearchAttributes([{ key: NodeUID, value: uid }]);
    this.describe();
  }

  /** The incarnation with this UID is deleted. */
  forget(uid: string): void {
    this.retire(uid, 'node deleted');
    if (uid !== this.run.state.incarnation) return;
    this.run.state.incarnation = '';
    upsertSearchAttributes([{ key: NodeUID, value: null }]);
    this.describe();
  }

  /** The incarnation the UI shows, and the ones being compensated. */
  describe(): void {
    const { nodeName, state } = this.run;
    const retired = Object.keys(state.retired);
    setCurrentDetails(
      `node ${nodeName} incarnation ${state.incarnation || '(not observed)'}` +
        (retired.length ? `; compensating ${retired.join(', ')}` : ''),
    );
  }

  private retire(uid: string, why: string): void {
    const { state } = this.run;
    if (uid === '' || state.retired[uid] || state.past.includes(uid)) return;
    state.retired[uid] = why;
    state.past = [...state.past.slice(-(PAST_KEPT - 1)), uid];
    log.info('node incarnation retired', { node: this.run.nodeName, uid, why });
  }

  /** Addresses handed out before the first observation belong to the incarnation seen first. */
  private adopt(uid: string): void {
    for (const table of Object.values(this.run.state.tables)) {
      for (const block of table.blocks) if (block.incarnation === '') block.incarnation = uid;
      for (const allocation of Object.values(table.allocations))
        if (allocation.incarnation === '') allocation.incarnation = uid;
    }
  }
}
