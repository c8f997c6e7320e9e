// A node's incarnations (Kubernetes node UIDs): the current one, the retired ones still being
// compensated, and the past ones a stale event must never make current again. The signals that
// change them are validated and checked against a quorum read of the Node first: a form sent
// from the UI with no input, or with a made-up uid, changes nothing (issue 25 item 3).
import { log, patched, upsertSearchAttributes } from '@temporalio/workflow';
import { IncarnationEventSchema } from '../../domain/node-requests';
import { NodeUID } from '../../domain/search-attributes';
import { describeIssues } from '../../domain/text-schemas';
import { noteIgnored, setDetailsKeepingNote } from '../notes';
import { readNodeIncarnation } from './block-activities';
import type { NodeRun } from './run';

/** Past incarnations remembered: a stale event names a recent one. */
const PAST_KEPT = 21;

/** Marks histories whose incarnation signals are checked by a quorum read (older ones were trusted). */
const VERIFIED_SIGNALS = 'verified-incarnation-signals';

type Verdict = { uid: string } | { ignored: string };

export class Incarnations {
  constructor(private readonly run: NodeRun) {}

  /** The `nodeObserved` signal: applied only when a quorum read finds the Node with that uid. */
  async observeSignalled(input: unknown): Promise<void> {
    const verdict = await this.verified('nodeObserved', input, (uid, live) =>
      live === uid ? undefined : `the Node's uid is ${live ?? '(no Node of that name)'} in a quorum read`,
    );
    if ('uid' in verdict) this.observe(verdict.uid);
  }

  /** The `nodeDeleted` signal: applied only when a quorum read finds no Node with that uid. */
  async forgetSignalled(input: unknown): Promise<void> {
    const verdict = await this.verified('nodeDeleted', input, (uid, live) =>
      live === uid ? `the Node still has uid ${uid} in a quorum read` : undefined,
    );
    if ('uid' in verdict) this.forget(verdict.uid);
  }

  private async verified(
    signal: string,
    input: unknown,
    refusal: (uid: string, live: string | undefined) => string | undefined,
  ): Promise<Verdict> {
    const parsed = IncarnationEventSchema.safeParse(input);
    const ignore = (why: string): Verdict => {
      noteIgnored(`ignored a ${signal} signal (${why})`, { node: this.run.nodeName });
      return { ignored: why };
    };
    if (!parsed.success) {
      // Older histories trusted any input (and a malformed one failed the task): keep their path.
      if (!patched(VERIFIED_SIGNALS)) return { uid: String((input as { uid?: unknown })?.uid ?? '') };
      return ignore(input === undefined ? 'no input' : describeIssues(parsed.error));
    }
    if (!patched(VERIFIED_SIGNALS)) return { uid: parsed.data.uid };
    const read = await readNodeIncarnation({ nodeName: this.run.nodeName });
    if (!read.cluster) return ignore('no cluster to check it against: incarnations are not used');
    const refused = refusal(parsed.data.uid, read.uid);
    return refused ? ignore(`uid ${parsed.data.uid}: ${refused}`) : { uid: parsed.data.uid };
  }

  /** A node UID seen by a quorum read: a new one retires the current incarnation. */
  observe(uid: string): void {
    const { state } = this.run;
    if (!uid || uid === state.incarnation || state.past.includes(uid)) return;
    if (state.incarnation !== '') this.retire(state.incarnation, `node replaced by incarnation ${uid}`);
    state.incarnation = uid;
    this.adoptUnclaimed(uid);
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

  /** The incarnation the UI shows, the ones being compensated, and what the node is doing. */
  describe(doing?: string): void {
    const { nodeName, state } = this.run;
    const retired = Object.keys(state.retired);
    setDetailsKeepingNote(
      `node ${nodeName} incarnation ${state.incarnation || '(not observed)'}` +
        (retired.length ? `; compensating ${retired.join(', ')}` : '') +
        (doing ? `; ${doing}` : ''),
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
  private adoptUnclaimed(uid: string): void {
    for (const table of Object.values(this.run.state.tables)) {
      for (const block of table.blocks) if (block.incarnation === '') block.incarnation = uid;
      for (const allocation of Object.values(table.allocations))
        if (allocation.incarnation === '') allocation.incarnation = uid;
    }
  }
}
