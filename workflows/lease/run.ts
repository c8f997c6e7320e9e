// What every concern of lease/<podUID>/<ifName> shares in one run: its state (the query's answer),
// the flags the phases decide on, the waits they share, and how a phase becomes visible.
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { ActivationPolicy } from '../../domain/config';
import { leaseWorkflowId } from '../../domain/ids';
import {
  FailureType,
  type Attachment,
  type LeaseGrant,
  type LeasePhase,
  type LeaseStart,
  type LeaseState,
  type RecoveredLease,
  type ReleaseRequest,
} from '../../domain/lease';
import { IPAddresses, LeasePhase as LeasePhaseKey } from '../../domain/search-attributes';
import { LeasePatches } from './patches';

export class LeaseRun {
  readonly state: LeaseState;
  readonly leaseId: string;
  readonly patches = new LeasePatches();
  /** The key of the current reservation (`run` of its allocate and return): a new one per reterm. */
  reservation: string;
  policy: ActivationPolicy | undefined;
  produceFailure: ApplicationFailure | undefined;
  releaseRequest: ReleaseRequest | undefined;
  /** The release has begun (workflows/lease/release): nothing is produced again after it. */
  releaseStarted = false;
  podRunning = false;
  /** The node agent holds the grant to answer an ADD itself; revoked before the addresses go back. */
  offered = false;
  /** Attachments a DEL came for while they were being activated: their activation stops. */
  readonly deletedWhileActivating = new Set<Attachment>();
  /** The addresses visibility lists (IPAddresses), to upsert them only when they change. */
  private listedAddresses: string | undefined;

  constructor(start: LeaseStart, recovered?: RecoveredLease) {
    this.leaseId = leaseWorkflowId(start.podUid, start.ifName);
    this.reservation = workflowInfo().runId;
    this.state = { phase: 'Producing', start, addresses: [], attachments: [] };
    if (recovered) {
      this.state.attachments = recovered.attachments.map((a) => ({ ...a, status: 'active' as const }));
      this.state.told = true;
      this.podRunning = recovered.podRunning;
    }
  }

  /** This run's id: an offer names the run it came from. */
  get runId(): string {
    return workflowInfo().runId;
  }

  /** The lease's terms and pod; a guess that gave way changed them (reterm). */
  get start(): LeaseStart {
    return this.state.start;
  }

  releasing(): boolean {
    return this.releaseRequest !== undefined;
  }

  isOver(): boolean {
    return this.produceFailure !== undefined || this.releasing();
  }

  /**
   * The phase, in the query and the current details at once; in visibility (LeasePhase, with
   * IPAddresses when they changed) unless `listed` is false: a phase the same step leaves again
   * (one-add-path runs) costs an event and a visibility write and is seen by nobody.
   */
  enter(phase: LeasePhase, details: string, listed = true): void {
    this.state.phase = phase;
    setCurrentDetails(`${phase}: ${details}`);
    if (!listed && this.patches.oneAddPath) return;
    const addresses = this.state.addresses.map((a) => a.address);
    const changed = addresses.join() !== this.listedAddresses || !this.patches.oneAddPath;
    this.listedAddresses = addresses.join();
    upsertSearchAttributes([
      { key: LeasePhaseKey, value: phase },
      ...(changed ? [{ key: IPAddresses, value: addresses }] : []),
    ]);
  }

  attachmentOf(key: { containerId: string; ifName: string }): Attachment | undefined {
    return this.state.attachments.find((a) => a.containerId === key.containerId && a.ifName === key.ifName);
  }

  grantFor(attachment: Attachment): LeaseGrant {
    return {
      leaseId: this.leaseId,
      addresses: this.state.addresses,
      containerId: attachment.containerId,
      ifName: attachment.ifName,
      ...(attachment.links ? { links: attachment.links } : {}),
    };
  }

  /** Until the addresses are reserved; a lease that failed to produce or is released refuses. */
  async produced(): Promise<void> {
    await this.until(() => this.state.addresses.length > 0 || this.isOver());
    if (this.produceFailure) throw this.produceFailure;
    if (this.releasing()) throw failure(`lease is ${this.state.phase}`, FailureType.released);
  }

  /** A handler's wait: a cancellation ends it as a release does (cancelled() ran first), not with an error. */
  async until(done: () => boolean): Promise<void> {
    await condition(done).catch((err: unknown) => {
      if (!isCancellation(err)) throw err;
    });
  }

  cancelledByRelease<T>(work: () => Promise<T>): Promise<T> {
    return this.cancelledWhen(() => this.releasing(), work);
  }

  /** Runs `work` in a scope of its own, cancelled once `done` holds. */
  async cancelledWhen<T>(done: () => boolean, work: () => Promise<T>): Promise<T> {
    const scope = new CancellationScope();
    // A cancelled workflow rejects this wait (it cancels the scope itself): not an unhandled rejection.
    void condition(done).then(
      () => scope.cancel(),
      () => undefined,
    );
    return scope.run(work);
  }
}

export function failure(message: string, type: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, type);
}
