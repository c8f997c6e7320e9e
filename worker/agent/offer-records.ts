// The node agent's offer records (domain/offer): one file per lease in the offer directory. Each
// decision is taken in memory first (one process: an answer and a revocation never both win), then
// written in the same order per lease; a change is on disk before anything acts on it.
import type { OfferRecord } from '../../domain/offer';
import { OfferRecordSchema } from '../../domain/offer';
import { offersHeld } from '../../observability/agent-metrics';
import { errorMessage, type Log } from '../../observability/log';
import { readDurableAs, removeDurably, sweptDurableFiles, writeDurably } from '../../storage/durable-files';

/** The file of a lease's offer in the agent's offer directory (the bench waits on it too). */
export const offerFileOf = (leaseId: string): string => `${encodeURIComponent(leaseId)}.json`;

export class OfferRecords {
  private readonly records = new Map<string, OfferRecord>();
  private readonly writes = new Map<string, Promise<void>>();

  constructor(
    private readonly dir: string,
    private readonly log: Log,
  ) {}

  /**
   * The answered records of an earlier agent, kept to be confirmed again (the crash may have come
   * first); unanswered ones are removed: the pre-producer offers them anew, so none outlives a
   * revocation that gave up. A file that cannot be read now (EIO, EMFILE…) is left for the next start.
   */
  async load(): Promise<OfferRecord[]> {
    const answered: OfferRecord[] = [];
    // Only this agent writes here, and it has written nothing yet: every temporary is an earlier
    // agent's, which died before renaming it.
    const { files, swept } = await sweptDurableFiles(this.dir, '.json', 0);
    for (const name of swept)
      this.log.warn({ file: name }, 'removed an offer file left half-written by an earlier agent');
    for (const name of files) {
      const offer = await readDurableAs(this.dir, name, OfferRecordSchema).catch((err: unknown) => {
        this.log.warn(
          { file: name, error: errorMessage(err) },
          'offer file cannot be read now; left as it is',
        );
        return null;
      });
      if (offer === null) continue;
      if (offer?.answered) {
        this.records.set(offer.leaseId, offer);
        answered.push(offer);
        continue;
      }
      // Unanswered, or unreadable; one that cannot even be removed must not stop the agent.
      await removeDurably(this.dir, name).catch((err: unknown) =>
        this.log.warn(
          { file: name, error: errorMessage(err) },
          'offer file cannot be removed; left as it is',
        ),
      );
    }
    this.counted();
    return answered;
  }

  get(leaseId: string): OfferRecord | undefined {
    return this.records.get(leaseId);
  }

  /** Holds `offer` for its lease, in memory then on disk. */
  put(offer: OfferRecord): Promise<void> {
    this.records.set(offer.leaseId, offer);
    this.counted();
    return this.persist(offer.leaseId, offer);
  }

  /** `next` in place of `current`; false if `current` was replaced meanwhile or `next` not written. */
  async replace(current: OfferRecord, next: OfferRecord): Promise<boolean> {
    const { leaseId } = current;
    if (this.records.get(leaseId) !== current) return false;
    this.records.set(leaseId, next);
    try {
      await this.persist(leaseId, next);
      return this.records.get(leaseId) === next;
    } catch (err) {
      if (this.records.get(leaseId) === next) this.records.set(leaseId, current);
      this.log.warn({ leaseId, error: errorMessage(err) }, 'offer: cannot write; asking the lease');
      return false;
    }
  }

  /**
   * `next` in place of `current` now, on disk after (in order with the lease's other writes): for
   * what a crash may lose without harm. False if `current` was replaced meanwhile.
   */
  swap(current: OfferRecord, next: OfferRecord): boolean {
    const { leaseId } = current;
    if (this.records.get(leaseId) !== current) return false;
    this.records.set(leaseId, next);
    this.persist(leaseId, next).catch((err: unknown) =>
      this.log.warn({ leaseId, error: errorMessage(err) }, 'offer: cannot write the answer with its links'),
    );
    return true;
  }

  /** Drops the lease's record (whichever it is), in memory then on disk (after `before`, in order). */
  remove(leaseId: string, before?: () => Promise<void>): Promise<void> {
    this.records.delete(leaseId);
    this.counted();
    return this.persist(leaseId, undefined, before);
  }

  /** Drops `offer` if it is still the lease's record. */
  async forget(offer: OfferRecord): Promise<void> {
    if (this.records.get(offer.leaseId) !== offer) return;
    await this.remove(offer.leaseId).catch(() => undefined);
  }

  /** Once what was decided for the lease so far is on disk. */
  async written(leaseId: string): Promise<void> {
    await this.writes.get(leaseId);
  }

  /** Writes (or removes) a lease's file after the ones before it, in the order decided. */
  private persist(
    leaseId: string,
    offer: OfferRecord | undefined,
    before: () => Promise<void> = () => Promise.resolve(),
  ): Promise<void> {
    const { dir } = this;
    const write = (this.writes.get(leaseId) ?? Promise.resolve())
      .catch(() => undefined)
      .then(before)
      .then(() =>
        offer
          ? writeDurably(dir, offerFileOf(leaseId), JSON.stringify(offer))
          : removeDurably(dir, offerFileOf(leaseId)),
      );
    this.writes.set(leaseId, write);
    void write
      .finally(() => {
        if (this.writes.get(leaseId) === write) this.writes.delete(leaseId);
      })
      .catch(() => undefined);
    return write;
  }

  private counted(): void {
    offersHeld.set(this.records.size);
  }
}
