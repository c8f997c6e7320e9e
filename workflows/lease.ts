// lease/<podUID>/<ifName>: one pod interface from produce to release. The reservation made at
// produce time stays bound to the pod until release (seed 003: nothing is popped at consume).
// Phases, each a method of Lease: produce → consume → activate → confirmRunning → release.
import {
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  condition,
  isCancellation,
  log,
  patched,
  sleep,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { ControlActivities } from '../activities/control';
import type { ActivationPolicy } from '../domain/config';
import { leaseWorkflowId } from '../domain/ids';
import {
  ActivatedLinksSchema,
  ConsumeSchema,
  DeactivateSchema,
  FailureType,
  ReleaseSchema,
  SandboxSchema,
  termsMismatch,
  termsText,
  type Attachment,
  type ConsumeRequest,
  type DeactivateRequest,
  type LeaseGrant,
  type LeasePhase as Phase,
  type LeaseStart,
  type LeaseState,
  type LeaseTerms,
  type RecoveredLease,
  type ReleaseRequest,
  type Sandbox,
} from '../domain/lease';
// Types only: every module the bundle evaluates costs heap in each cached workflow (its own copy).
import type { Offer, OfferAnswer } from '../domain/offer';
import { IPAddresses, LeasePhase, NodeName } from '../domain/search-attributes';
import { describeIssues } from '../domain/text-schemas';
import { activateOnNode, addressList, deactivateOnNode, revokeOfferOnNode, summary } from './dataplane';
import { causeOf, describe, toApplicationFailure } from './failures';
import {
  confirmAnswerUpdate,
  consumeUpdate,
  deactivateUpdate,
  leaseStateQuery,
  nodeReplacedSignal,
  offerUpdate,
  podRunningSignal,
  releaseSignal,
  retrySignal,
} from './lease-messages';
import { brokenAt, failpoint } from './failpoints';
import { noteIgnored } from './notes';
import { validated } from './validated';

const { produceAddresses, returnAddresses } = proxyActivities<ControlActivities>({
  startToCloseTimeout: '30 seconds',
  // They heartbeat while they run: a worker killed mid-call costs 10 s, not 30 (the SDK's
  // heartbeats come every 8 s at most, so 2 s of slack for a busy server).
  heartbeatTimeout: '10 seconds',
  retry: {
    initialInterval: '200 ms',
    maximumInterval: '10 seconds',
    nonRetryableErrorTypes: [
      FailureType.invalidConfig,
      FailureType.nodeUnknown,
      FailureType.exhausted,
      FailureType.conflict,
      FailureType.released,
    ],
  },
});

/**
 * Marks histories in which the release signal and the deactivate update emit their commands in
 * their own job (older ones emitted them from the main body / after a wait).
 */
const COMMANDS_AT_JOB = 'commands-at-job';

/**
 * Marks histories whose stall timer is left to fire (or to be dropped with the workflow) instead of
 * being cancelled when the lease leaves Active: the cancellation came from a continuation, and a
 * continuation's command can land elsewhere among a task's commands on replay (the soak found one
 * beside a release signal and a deactivate update, test/workflow/lease-message-order).
 */
const STALL_TIMER_KEPT = 'stall-timer-kept';

/**
 * Marks histories in which a confirmAnswer that comes while the lease is releasing hands its
 * sandbox to the release (older ones refused it, and the interface the agent made was left).
 */
const ANSWER_INTO_RELEASE = 'answer-into-release';

/**
 * Marks histories in which a release saying the node is gone, coming while an earlier release
 * (which did not know it) waits on the node's agent to revoke its offer or deactivate, drops those
 * steps: a deleted node's agent never answers, and the addresses were held for the hour of their
 * budget (the real node-replaced e2e: the pod GC's deletions reached the watcher first).
 */
const NODE_GONE_ENDS_DEACTIVATION = 'node-gone-ends-deactivation';

/**
 * Marks histories in which a newer sandbox's claim stops the activation of an older one (older
 * ones activated every claimed sandbox in turn, each with its whole budget). The kubelet runs one
 * sandbox per pod at a time: a new one (a machine that took over the node's name, a runtime that
 * gave up on the first) means the older is gone, and its namespace may never come (the soak).
 */
const NEWER_SANDBOX_FIRST = 'newer-sandbox-first';

/**
 * Marks histories in which an ADD after a withdrawn guess failed to produce (a Node not known
 * yet, a pool not served) produces again on its own terms. Older ones answered every later ADD
 * with that first failure, even one of other, valid terms (the fuzz, seed 579550361).
 */
const PRODUCE_AGAIN_AFTER_FAILED_GUESS = 'produce-again-after-failed-guess';

/** The release reason of a lease whose workflow was cancelled (UI, `temporal workflow cancel`). */
export const CANCELLED_REASON = 'cancelled: a cancellation of the lease workflow was requested';

/**
 * `recovered`: what a closed run of this lease held, when the control worker starts it again
 * because its pod still runs (issue 25 item 6): its sandboxes, and whether the pod was Running.
 */
export async function leaseWorkflow(start: LeaseStart, recovered?: RecoveredLease): Promise<LeaseState> {
  const lease = new Lease(start, recovered);
  lease.registerHandlers();
  try {
    if (await lease.produce()) await lease.activateUntilReleased();
  } catch (err) {
    if (!isCancellation(err)) throw err;
    lease.cancelled();
  }
  // A cancelled lease still gives its addresses back: release runs whatever is cancelled.
  return CancellationScope.nonCancellable(async () => {
    await lease.startRelease();
    await condition(allHandlersFinished);
    return lease.state;
  });
}

class Lease {
  readonly state: LeaseState;
  private readonly leaseId: string;
  /** The key of the current reservation (`run` of its allocate and return): a new one per reterm. */
  private reservation: string;
  private reterms = 0;
  /** Withdrawals of a guess, one after another (workflows/lease: reterm). */
  private reterming: Promise<void> = Promise.resolve();
  /** A revocation the node workflow asked for (nodeReplaced); the release waits for it. */
  private revoking: Promise<void> | undefined;
  /** A later release said the node is gone: deactivations waiting on its agent are dropped. */
  private nodeGoneLater = false;
  private policy: ActivationPolicy | undefined;
  private produceFailure: ApplicationFailure | undefined;
  private releaseRequest: ReleaseRequest | undefined;
  private podRunning = false;
  /** The node agent holds the grant to answer an ADD itself; revoked before the addresses go back. */
  private offered = false;
  private releaseRun: Promise<void> | undefined;

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

  /** The lease's terms and pod; a guess that gave way changed them (reterm). */
  private get start(): LeaseStart {
    return this.state.start;
  }

  registerHandlers(): void {
    setHandler(consumeUpdate, (request) => this.consume(request), {
      validator: (request) => {
        validated(ConsumeSchema, 'consume')(request);
        this.refuseOtherTerms(request);
      },
    });
    setHandler(offerUpdate, () => this.offer(), {
      description: 'Sent by the node agent that pre-produced the lease (not for operators).',
    });
    setHandler(confirmAnswerUpdate, (answer) => this.confirmAnswer(answer), {
      validator: (answer) => {
        validated(SandboxSchema, 'confirmAnswer')(answer);
        if (answer.links !== undefined) validated(ActivatedLinksSchema, 'confirmAnswer links')(answer.links);
      },
      description: 'Sent by the node agent for an ADD it answered from its offer (not for operators).',
    });
    setHandler(deactivateUpdate, (request) => this.deactivateSandbox(request), {
      validator: validated(DeactivateSchema, 'deactivate'),
    });
    // Descriptions: what the UI's Signal form and Queries tab (workflow metadata) offer an operator.
    setHandler(podRunningSignal, () => this.confirmRunning(), {
      description: 'Sent by netlease when the pod is Running (not for operators).',
    });
    setHandler(releaseSignal, (request: unknown) => this.requestRelease(request), {
      description:
        'Release the lease: deactivate and return its addresses. Input: {"reason":"manual"} (without a reason it is ignored).',
    });
    setHandler(retrySignal, () => this.retryParked(), {
      description: 'Run a parked (ActivationFailed) activation again with a fresh budget. No input.',
    });
    setHandler(nodeReplacedSignal, (event: unknown) => this.nodeReplaced(event), {
      description:
        'Sent by the node workflow when a new incarnation of the node adopted the lease (not for operators).',
    });
    setHandler(leaseStateQuery, () => this.state, { description: 'The whole lease state.' });
    // A cancellation request (UI, `temporal workflow cancel`) is a release: every wait sees it.
    CancellationScope.current().cancelRequested.catch(() => this.cancelled());
  }

  /**
   * The `release` signal. A signal cannot be refused, and a handler that throws fails every
   * workflow task, wedging the lease: input without a reason (none, `{}`) is ignored, logged and
   * shown in the current details. Release takes the addresses from a pod that may be running, so
   * it is never guessed from an empty form.
   */
  private requestRelease(request: unknown): void {
    const parsed = ReleaseSchema.safeParse(request);
    if (parsed.success) {
      const unknowing = this.releaseRequest && !this.releaseRequest.nodeGone;
      if (unknowing && parsed.data.nodeGone && patched(NODE_GONE_ENDS_DEACTIVATION)) {
        this.nodeGoneLater = true;
        log.info('the node is gone: deactivations still waiting on its agent are dropped');
      }
      this.releaseRequest ??= parsed.data;
      log.info('release signal received', { reason: this.releaseRequest.reason, phase: this.state.phase });
      if (this.nothingInFlight() && patched(COMMANDS_AT_JOB)) void this.startRelease();
      return;
    }
    const problems = request === undefined ? 'no input' : describeIssues(parsed.error);
    const text = `ignored a release signal (${problems}): send \`{"reason":"<why>"}\` to release the lease`;
    noteIgnored(text, { leaseId: this.leaseId });
  }

  /**
   * nodeReplaced: the node's new incarnation adopted this lease (its pod lives on). An offer the
   * old incarnation's agent holds is revoked: the pod's next ADD is served by the lease.
   */
  private nodeReplaced(event: unknown): void {
    const uid = (event as { uid?: unknown } | undefined)?.uid;
    if (typeof uid !== 'string' || !uid) return noteIgnored('ignored a nodeReplaced signal (no uid)');
    log.info('adopted by a new node incarnation', { uid, offered: this.offered });
    if (!this.offered || this.releasing()) return;
    this.revoking = this.revokeOffer();
  }

  /** The workflow was cancelled: released like any release, the reason says so. */
  cancelled(): void {
    this.releaseRequest ??= { reason: CANCELLED_REASON, nodeGone: false };
  }

  /** produce: reserve the addresses for this pod. A release meanwhile cancels it. */
  async produce(): Promise<boolean> {
    setCurrentDetails(`Producing: reserving addresses on node ${this.start.nodeName}`);
    try {
      const produced = await this.cancelledByRelease(() =>
        produceAddresses.executeWithOptions(
          {
            summary: summary(
              `produce: reserve addresses from pool ${this.start.pool} on node ${this.start.nodeName}`,
            ),
          },
          [
            {
              leaseId: this.leaseId,
              run: this.reservation,
              podUid: this.start.podUid,
              nodeName: this.start.nodeName,
              pool: this.start.pool,
            },
          ],
        ),
      );
      this.state.addresses = produced.addresses;
      this.policy = produced.activation;
      // A lease started again for a pod that runs (reconciler) has its sandboxes already.
      const recovered = this.state.attachments.find((a) => a.status === 'active');
      if (recovered) this.activated(recovered);
      else this.enter('Produced', 'addresses reserved; waiting for a CNI ADD');
      return true;
    } catch (err) {
      if (isCancellation(err) && this.releasing()) return false;
      if (isCancellation(err)) throw err;
      this.produceFailure = toApplicationFailure(err, FailureType.invalidConfig);
      this.state.lastError = this.produceFailure.message;
      return false;
    }
  }

  /**
   * offer: the node agent holds the grant on disk to answer the pod's first ADD (domain/offer); it
   * gets the lease's own start, so it answers only an ADD of the lease's terms.
   */
  private async offer(): Promise<Offer> {
    await this.produced();
    this.offered = true;
    return { run: workflowInfo().runId, start: this.start, addresses: this.state.addresses };
  }

  /** confirmAnswer: the agent answered an ADD from its offer; its sandbox is an active attachment. */
  private async confirmAnswer(answer: OfferAnswer): Promise<LeaseGrant> {
    this.offered = false; // spent
    try {
      await this.produced();
    } catch (err) {
      // Released meanwhile: the interface the agent made is the release's to remove.
      if (this.releasing() && patched(ANSWER_INTO_RELEASE) && !this.attachmentOf(answer))
        this.state.attachments.push(attachmentFor(answer, 'active'));
      throw err;
    }
    const held = this.state.addresses.map((a) => a.address);
    if (answer.addresses && answer.addresses.join() !== held.join())
      throw failure(
        `the answer told ${answer.addresses.join(', ')}; this lease holds ${held.join(', ')}`,
        FailureType.conflict,
      );
    this.state.told = true;
    const attachment = this.claim(answer);
    // The agent made the interface (ptp) or there is none to make (ipam): nothing left to run.
    if (attachment.status === 'pending' && (answer.links || this.start.mode === 'ipam')) {
      attachment.links = answer.links;
      this.activated(attachment);
    }
    return this.grantFor(attachment);
  }

  /**
   * An ADD of another network, mode, pool or node than the lease's: refused before it is admitted
   * (no event) once a runtime was told the lease's addresses; until then the lease's terms were a
   * guess (pre-produced), which gives way (reterm).
   */
  private refuseOtherTerms(request: ConsumeRequest): void {
    const mismatch = termsMismatch(this.start, request.terms);
    if (mismatch && this.state.told) throw failure(mismatch, FailureType.termsMismatch);
  }

  /** consume: a CNI ADD claims the lease for one sandbox and waits for its activation. */
  private async consume(request: ConsumeRequest): Promise<LeaseGrant> {
    if (termsMismatch(this.start, request.terms) || this.mayProduceAgain()) await this.reterm(request.terms);
    await this.produced();
    this.state.told = true;
    const attachment = this.claim(request);
    await this.until(
      () => attachment.status === 'active' || attachment.status === 'parked' || this.releasing(),
    );
    if (attachment.status !== 'active') {
      throw failure(
        `activation failed: ${this.state.lastError ?? this.state.phase}`,
        FailureType.activationFailed,
      );
    }
    return this.grantFor(attachment);
  }

  /** The guess gives way to the ADD's terms, once per difference (concurrent ADDs queue). */
  private reterm(terms: LeaseTerms): Promise<void> {
    this.reterming = this.reterming.catch(() => undefined).then(() => this.withdrawGuess(terms));
    return this.reterming;
  }

  /**
   * reterm: the lease was produced on a guess nobody was told (the agent's pre-produce settings);
   * an ADD of other terms withdraws it: the offer is revoked, the guessed addresses go back, and
   * the lease is produced again on the ADD's terms. An offer answered meanwhile means a runtime
   * was told: then the ADD is refused as before.
   */
  private async withdrawGuess(terms: LeaseTerms): Promise<void> {
    await this.until(() => this.state.addresses.length > 0 || this.isOver());
    if (this.mayProduceAgain()) return this.produceAgain(terms);
    if (this.isOver() || !termsMismatch(this.start, terms)) return;
    const was = termsText(this.start);
    if (this.offered) await this.revokeOffer();
    const mismatch = termsMismatch(this.start, terms);
    if (this.state.told && mismatch) throw failure(mismatch, FailureType.termsMismatch);
    this.enter(
      'Producing',
      `withdrawing the guess (${was}): an ADD asks for ${termsText({ ...this.start, ...terms })}`,
    );
    await this.giveBackAddresses();
    this.state.addresses = [];
    await this.produceOn(terms);
    log.info('pre-produced guess withdrawn', { was, now: termsText(this.start) });
  }

  /**
   * A withdrawn guess whose produce failed (its ADD got the error) holds nothing and told nobody:
   * the next ADD is a retry, on its own terms (the Node may exist by now, or the ADD names another).
   */
  private mayProduceAgain(): boolean {
    const failedGuess = this.produceFailure !== undefined && this.reterms > 0 && !this.state.told;
    return (
      failedGuess &&
      this.releaseRun === undefined &&
      !this.releasing() &&
      patched(PRODUCE_AGAIN_AFTER_FAILED_GUESS)
    );
  }

  private async produceAgain(terms: LeaseTerms): Promise<void> {
    const failed = this.produceFailure?.message ?? '';
    this.produceFailure = undefined;
    this.enter(
      'Producing',
      `an ADD asks for ${termsText({ ...this.start, ...terms })} (the last produce failed: ${failed})`,
    );
    await this.produceOn(terms);
  }

  /** The lease's terms become the ADD's, reserved under a key of their own. */
  private async produceOn(terms: LeaseTerms): Promise<void> {
    this.state.start = { ...this.start, ...terms };
    upsertSearchAttributes([{ key: NodeName, value: this.start.nodeName }]);
    this.reservation = `${workflowInfo().runId}~${++this.reterms}`;
    await this.produce();
  }

  /** Until the addresses are reserved; a lease that failed to produce or is released refuses. */
  private async produced(): Promise<void> {
    await this.until(() => this.state.addresses.length > 0 || this.isOver());
    if (this.produceFailure) throw this.produceFailure;
    if (this.releasing()) throw failure(`lease is ${this.state.phase}`, FailureType.released);
  }

  /** The sandbox's attachment; a repeated ADD of a parked one is a retry. */
  private claim(sandbox: Sandbox): Attachment {
    const same = this.attachmentOf(sandbox);
    if (same) {
      if (same.status === 'parked') same.status = 'pending';
      return same;
    }
    const attachment = attachmentFor(sandbox, 'pending');
    this.state.attachments.push(attachment);
    this.enter('Consumed', `claimed by sandbox ${sandbox.containerId.slice(0, 12)}`);
    return attachment;
  }

  /** Activates each claimed attachment in turn until the lease is released. */
  async activateUntilReleased(): Promise<void> {
    const next = () => this.state.attachments.find((a) => a.status === 'pending');
    while (!this.releasing()) {
      await condition(() => this.releasing() || next() !== undefined);
      const attachment = next();
      if (attachment && !this.releasing()) await this.activate(attachment);
    }
  }

  /**
   * activate: one run of the node-local steps with the policy's retry budget; parks when spent. A
   * release interrupts it: retrying toward a sandbox that is gone (a deleted pod, a replaced node)
   * held the addresses for the whole budget. The release then deactivates what it made, by name.
   */
  private async activate(attachment: Attachment): Promise<void> {
    attachment.status = 'activating';
    this.enter('Activating', `configuring ${attachment.ifName} in ${attachment.netns || 'the runtime'}`);
    const superseded = patched(NEWER_SANDBOX_FIRST) ? () => this.newerClaim(attachment) : () => undefined;
    try {
      attachment.links = await this.cancelledWhen(
        () => this.releasing() || superseded() !== undefined,
        () => activateOnNode(this.start, attachment, this.state.addresses, this.policy),
      );
      this.activated(attachment);
    } catch (err) {
      if (isCancellation(err) && this.releasing()) return;
      const newer = superseded();
      if (isCancellation(err) && newer) return this.supersede(attachment, newer);
      if (isCancellation(err)) throw err;
      this.park(attachment, err);
    }
  }

  /** A sandbox claimed after this attachment's and waiting for its activation. */
  private newerClaim(attachment: Attachment): Attachment | undefined {
    const after = this.state.attachments.slice(this.state.attachments.indexOf(attachment) + 1);
    return after.find((a) => a.status === 'pending');
  }

  /** Left as parked (its ADD is refused; a DEL or the release removes what was made): the newer goes first. */
  private supersede(attachment: Attachment, newer: Attachment): void {
    attachment.status = 'parked';
    log.info('activation stopped: a newer sandbox of the pod was claimed', {
      containerId: attachment.containerId,
      newer: newer.containerId,
    });
  }

  private activated(attachment: Attachment): void {
    attachment.status = 'active';
    this.state.lastError = undefined;
    if (this.podRunning) this.enter('Running', 'pod is Running');
    else {
      this.enter('Active', 'interface ready; waiting for the pod to be Running');
      void this.watchForStall();
    }
  }

  /**
   * The budget is spent. The current details (markdown in the UI) lead with the cause and the
   * remedy, then say what is kept; `lastError` keeps the whole error for the CNI result.
   */
  private park(attachment: Attachment, err: unknown): void {
    attachment.status = 'parked';
    this.state.lastError = describe(err);
    log.warn('lease parked in ActivationFailed: send the retry signal once the cause is fixed', {
      ifName: attachment.ifName,
      containerId: attachment.containerId,
      error: causeOf(err),
    });
    const kept = this.state.addresses.map((a) => `\`${a.address}/${a.prefixLength}\``).join(', ');
    const budget = this.policy ? `its budget of ${this.policy.maximumAttempts} attempts` : 'its budget';
    this.enter(
      'ActivationFailed',
      `${causeOf(err)}. Remedy: fix that, then send the \`retry\` signal (no input) to activate ` +
        `${attachment.ifName} again with a fresh budget. Activation spent ${budget}` +
        `${kept ? `; ${kept} stay reserved for the pod` : ''}.`,
    );
  }

  /** The `retry` signal: every parked attachment is activated again with a fresh budget. */
  private retryParked(): void {
    const parked = this.state.attachments.filter((a) => a.status === 'parked').length;
    log.info('retry signal received', { parked, phase: this.state.phase });
    for (const attachment of this.state.attachments)
      if (attachment.status === 'parked') attachment.status = 'pending';
  }

  /** confirm-running: the pod with this UID is Running (watch hint verified by a quorum read). */
  private confirmRunning(): void {
    log.info('podRunning signal received', { phase: this.state.phase });
    brokenAt('pod-running');
    failpoint('pod-running');
    this.podRunning = true;
    if (this.state.phase === 'Active' || this.state.phase === 'Stalled')
      this.enter('Running', 'pod is Running');
  }

  /** Active for too long without the pod Running: visible as Stalled, never released for it. */
  private async watchForStall(): Promise<void> {
    const seconds = this.policy?.stalledAfterSeconds ?? 600;
    const stillActive = () => !this.podRunning && this.state.phase === 'Active';
    if (patched(STALL_TIMER_KEPT)) {
      // Not cancellable (it may start inside an activation's scope, which a release cancels).
      await CancellationScope.nonCancellable(() => sleep(`${seconds} seconds`));
      if (stillActive()) this.enter('Stalled', `active for ${seconds} s but the pod is not Running`);
      return;
    }
    const settled = await condition(
      () => this.podRunning || this.state.phase !== 'Active',
      `${seconds} seconds`,
    ).catch((err: unknown) => {
      if (isCancellation(err)) return true; // cancelled: the lease is released
      throw err;
    });
    if (!settled && this.state.phase === 'Active')
      this.enter('Stalled', `active for ${seconds} s but the pod is not Running`);
  }

  /** A CNI DEL: only this sandbox's attachment ends; the addresses stay with the pod. */
  private async deactivateSandbox(request: DeactivateRequest): Promise<boolean> {
    const attachment = this.attachmentOf(request);
    if (!attachment) return false;
    // Waits only for an activation in flight, so the deactivation is scheduled in the update's own job.
    if (attachment.status === 'activating' || !patched(COMMANDS_AT_JOB))
      await condition(() => attachment.status !== 'activating');
    this.state.attachments = this.state.attachments.filter((a) => a !== attachment);
    await this.deactivate(attachment);
    if (!this.releasing() && !this.state.attachments.some((a) => a.status === 'active')) {
      this.enter('Produced', 'sandbox deleted; address held for the pod until it is gone');
    }
    return true;
  }

  /**
   * The release runs once. The release signal starts it in its own job when nothing is in flight:
   * the SDK runs the jobs of one workflow task with or without running the workflow's continuations
   * between them (the first run and a replay may differ: a signal's continuation before an update's
   * acceptance, or after it), so commands issued from a continuation can come out in another order
   * on replay. Commands issued in a job keep the jobs' order. A produce or an activation in flight
   * ends first (the main body starts the release then).
   */
  startRelease(): Promise<void> {
    this.releaseRun ??= CancellationScope.nonCancellable(() => this.release());
    return this.releaseRun;
  }

  private nothingInFlight(): boolean {
    return this.state.phase !== 'Producing' && !this.state.attachments.some((a) => a.status === 'activating');
  }

  /** release: deactivate on the node (skipped when the node is gone), return the addresses. */
  async release(): Promise<void> {
    if (this.produceFailure) {
      this.enter('Released', `produce failed: ${this.produceFailure.message}`);
      log.info('lease released', { reason: `produce failed: ${this.produceFailure.message}`, addresses: [] });
      return;
    }
    const request = this.releaseRequest ?? { reason: 'released', nodeGone: false };
    this.state.releaseReason = request.reason;
    this.enter('Releasing', `${request.reason}; deactivating and returning addresses`);
    if (this.revoking) await this.revoking; // no await otherwise: the commands keep their order
    if (this.offered && !request.nodeGone) await this.revokeOffer();
    await this.deactivateAll(request.nodeGone);
    await this.giveBackAddresses();
    // A sandbox handed over after the addresses went back (an answer confirmed late) goes too.
    await this.deactivateAll(request.nodeGone);
    this.enter('Released', `${request.reason}; addresses returned`);
    log.info('lease released', {
      reason: request.reason,
      addresses: this.state.addresses.map((a) => a.address),
    });
  }

  /** Every attachment, including one taken in while this runs (skipped when the node is gone). */
  private async deactivateAll(nodeGone: boolean | undefined): Promise<void> {
    if (!nodeGone) for (const attachment of this.state.attachments) await this.deactivate(attachment);
    this.state.attachments = [];
  }

  /** return: the reservation goes back to its node (cooling down before it is handed out again). */
  private async giveBackAddresses(): Promise<void> {
    await returnAddresses.executeWithOptions(
      {
        summary: summary(
          `return: give ${addressList(this.state.addresses) || 'the reservation'} back to pool ${this.start.pool}`,
        ),
      },
      [
        {
          leaseId: this.leaseId,
          run: this.reservation,
          nodeName: this.start.nodeName,
          pool: this.start.pool,
        },
      ],
    );
  }

  /** The agent's offer ends before the addresses go back; an ADD it answered becomes an attachment. */
  private async revokeOffer(): Promise<void> {
    try {
      const answered = await this.cancelledWhen(
        () => this.nodeGoneLater,
        () => revokeOfferOnNode(this.start, this.leaseId, workflowInfo().runId),
      );
      if (answered && !this.attachmentOf(answered))
        this.state.attachments.push(attachmentFor(answered, 'active'));
    } catch (err) {
      if (isCancellation(err) && !this.nodeGoneLater) throw err;
      this.state.lastError = isCancellation(err)
        ? "revoking the node agent's offer dropped: the node is gone"
        : `revoking the node agent's offer gave up: ${describe(err)}`;
    }
    this.offered = false;
  }

  /** A node that stays unreachable past the deactivation budget must not wedge DEL or release. */
  private async deactivate(attachment: Attachment): Promise<void> {
    try {
      await this.cancelledWhen(
        () => this.nodeGoneLater,
        () => deactivateOnNode(this.start, attachment, this.state.addresses),
      );
    } catch (err) {
      if (isCancellation(err) && this.nodeGoneLater) {
        this.state.lastError = `deactivating ${attachment.ifName} of ${attachment.containerId.slice(0, 12)} dropped: the node is gone`;
        return;
      }
      if (isCancellation(err)) throw err;
      this.state.lastError = `deactivating ${attachment.ifName} of ${attachment.containerId.slice(0, 12)} gave up: ${describe(err)}`;
    }
  }

  /** A handler's wait: a cancellation ends it as a release does (cancelled() ran first), not with an error. */
  private async until(done: () => boolean): Promise<void> {
    await condition(done).catch((err: unknown) => {
      if (!isCancellation(err)) throw err;
    });
  }

  private cancelledByRelease<T>(work: () => Promise<T>): Promise<T> {
    return this.cancelledWhen(() => this.releasing(), work);
  }

  /** Runs `work` in a scope of its own, cancelled once `done` holds. */
  private async cancelledWhen<T>(done: () => boolean, work: () => Promise<T>): Promise<T> {
    const scope = new CancellationScope();
    // A cancelled workflow rejects this wait (it cancels the scope itself): not an unhandled rejection.
    void condition(done).then(
      () => scope.cancel(),
      () => undefined,
    );
    return scope.run(work);
  }

  private enter(phase: Phase, details: string): void {
    this.state.phase = phase;
    upsertSearchAttributes([
      { key: LeasePhase, value: phase },
      { key: IPAddresses, value: this.state.addresses.map((a) => a.address) },
    ]);
    setCurrentDetails(`${phase}: ${details}`);
  }

  private attachmentOf(key: { containerId: string; ifName: string }): Attachment | undefined {
    return this.state.attachments.find((a) => a.containerId === key.containerId && a.ifName === key.ifName);
  }

  private grantFor(attachment: Attachment): LeaseGrant {
    return {
      leaseId: this.leaseId,
      addresses: this.state.addresses,
      containerId: attachment.containerId,
      ifName: attachment.ifName,
      ...(attachment.links ? { links: attachment.links } : {}),
    };
  }

  private releasing(): boolean {
    return this.releaseRequest !== undefined;
  }

  private isOver(): boolean {
    return this.produceFailure !== undefined || this.releasing();
  }
}

/** The sandbox of an ADD as the lease keeps it. */
function attachmentFor(
  sandbox: Sandbox & Partial<Pick<OfferAnswer, 'links'>>,
  status: Attachment['status'],
): Attachment {
  const { containerId, netns, ifName, routes, links } = sandbox;
  return { containerId, netns, ifName, status, ...(routes ? { routes } : {}), ...(links ? { links } : {}) };
}

function failure(message: string, type: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, type);
}
