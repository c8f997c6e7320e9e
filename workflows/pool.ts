// pool/<poolName>: hands blocks of the pool's CIDRs to node incarnations and takes them back.
// Touched only when a node needs a block, so ADDs on different nodes never contend here; when
// many nodes need one at once (a cluster coming up), the control worker sends their requests as
// one batch update (`acquireBlocks`), each answered on its own. The pool owns its spec: it changes
// only through `configure`, which refuses what would move a handed-out block (domain/pool-change).
// A run that starts without its blocks rebuilds them from the nodes and leases first, and a reset
// run's answers say "unverified" until the control worker has it rebuild (as node/rebuild does).
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  log,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';
import type { ControlActivities } from '../activities/control';
import { poolFamilies } from '../domain/allocation';
import { blocksOf, freeBlock, namedBlocksOf, overlappingBlock } from '../domain/blocks';
import { parsePrefix } from '../domain/cidr';
import { isPinnedBlock, pinnedBlockOf, staticAddressProblem } from '../domain/static-addresses';
import {
  expiredReservations,
  fenceMessage,
  heldWithReservations,
  idleOfDeleted,
  keepMsOf,
  nextExpiry,
  reservationOf,
  stickyCandidate,
} from '../domain/sticky-addresses';
import { FailureType } from '../domain/lease';
import { RebuildRequestSchema } from '../domain/node-requests';
import { refusedPoolChange } from '../domain/pool-change';
import {
  BlockRequestsSchema,
  EndReservationsRequestSchema,
  MoveBlocksRequestSchema,
  PoolConfigurationSchema,
  ReturnBlocksRequestSchema,
  AcquireBlockRequestSchema,
  ReserveRequestSchema,
} from '../domain/pool-requests';
import {
  rebuildBlockTable,
  type HeldBlockEvidence,
  type PoolEvidence,
  type PoolRebuildReport,
} from '../domain/table-rebuild';
import { historyGauge, untilTimeToContinue } from './continue-as-new';
import { failpoint } from './failpoints';
import { noteIgnored } from './notes';
import {
  acquireBlocksUpdate,
  acquireBlockUpdate,
  CONFIGURED_POOLS_MEMO,
  configureUpdate,
  endReservationsUpdate,
  moveBlocksUpdate,
  poolSpecQuery,
  poolStateQuery,
  rebuildPoolUpdate,
  reservationsQuery,
  reserveAddressesUpdate,
  returnBlocksUpdate,
  type AcquireBlockRequest,
  type BlockOutcome,
  type BlockRequest,
  type PoolInput,
  type PoolState,
} from './pool-messages';
import { ResultMemory } from './remembered-results';
import { TableTrust } from './table-trust';
import { validated } from './validated';

const { poolTableEvidence } = proxyActivities<ControlActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/** Marks runs that rebuild blocks they did not carry (older runs started empty). */
const FRESH_RUN_REBUILD = 'pool-table-rebuild';

/** Marks runs whose returns and moves take a node's named blocks recorded before its incarnation. */
const UNOBSERVED_NAMED_BLOCKS = 'pool-unobserved-named-blocks';

/** Marks runs whose table, not vouched for, hands nothing out (older runs cut the block, then refused). */
const UNVERIFIED_HANDS_NOTHING = 'pool-unverified-hands-nothing';

const CANCELLATION_IGNORED =
  'a cancellation request is ignored: the pool workflow holds the only record of its blocks. ' +
  'Terminate it to have it rebuilt from the nodes (docs/operating.md: "A lease that does not move")';

export async function poolWorkflow(input: PoolInput): Promise<never> {
  const historyLong = historyGauge(input.historyLimit);
  const pool = new Pool(input);
  // Begun before the handlers are set: a hand-out that came with the start must find it running.
  const rebuilt = CancellationScope.nonCancellable(() => pool.beginIfFresh());
  // Not cancellable, as the pool is not (the soak: the UI's Cancel failed a task on its timer).
  void CancellationScope.nonCancellable(() => pool.expireIdleReservations());
  pool.registerHandlers();
  CancellationScope.current().cancelRequested.catch(() => noteIgnored(CANCELLATION_IGNORED));
  return CancellationScope.nonCancellable(async () => {
    pool.details();
    await rebuilt;
    await untilTimeToContinue(historyLong);
    failpoint('continue-as-new');
    // The memo (the pools the control worker serves) goes with the run, as the agents read it.
    return continueAsNew<typeof poolWorkflow>({
      ...input,
      restartedAfter: undefined,
      configuredPools: pool.carried().configuredPools ?? input.configuredPools,
      state: pool.carried(),
    });
  });
}

class Pool {
  private readonly state: PoolState;
  private readonly memory: ResultMemory;
  private readonly trust: TableTrust;
  private rebuilding: Promise<PoolRebuildReport | null> | undefined;

  constructor(private readonly input: PoolInput) {
    this.state = input.state ?? { spec: input.spec, blocks: {}, results: [] };
    this.memory = new ResultMemory(this.state.results);
    this.trust = TableTrust.carriedIn(input.state);
  }

  registerHandlers(): void {
    setHandler(acquireBlockUpdate, (request) => this.memory.once(() => this.handOut(request)), {
      validator: validated(AcquireBlockRequestSchema, 'acquireBlock'),
    });
    setHandler(acquireBlocksUpdate, (requests) => Promise.all(requests.map((r) => this.handOutOf(r))), {
      validator: validated(BlockRequestsSchema, 'acquireBlocks'),
    });
    setHandler(returnBlocksUpdate, (request) => this.memory.once(() => this.takeBack(request)), {
      validator: (request) => {
        validated(ReturnBlocksRequestSchema, 'returnBlocks')(request);
        this.refuseTableChangeWhileRebuilding('taken back');
      },
    });
    setHandler(moveBlocksUpdate, (request) => this.memory.once(() => this.move(request)), {
      validator: (request) => {
        validated(MoveBlocksRequestSchema, 'moveBlocks')(request);
        this.refuseTableChangeWhileRebuilding('moved');
      },
    });
    setHandler(configureUpdate, ({ spec, configuredPools }) => this.configure(spec, configuredPools), {
      validator: (configuration) => {
        validated(PoolConfigurationSchema, 'configure')(configuration);
        const { spec } = configuration as { spec: PoolState['spec'] };
        this.refuseWhileRebuilding(spec);
        const refused = refusedPoolChange(this.state.spec, spec, Object.keys(this.state.blocks));
        if (refused) throw new Error(refused);
      },
    });
    setHandler(
      rebuildPoolUpdate,
      ({ forRun }) => CancellationScope.nonCancellable(() => this.rebuild(forRun, 'found unverified')),
      { validator: validated(RebuildRequestSchema, 'rebuild') },
    );
    setHandler(reserveAddressesUpdate, ({ key }) => this.reserveOnWholeTable(key), {
      validator: validated(ReserveRequestSchema, 'reserveAddresses'),
      description: 'Sent by the node agent for a sticky StatefulSet pod (not for operators).',
    });
    setHandler(endReservationsUpdate, ({ statefulSets }) => this.endReservationsOf(statefulSets), {
      validator: (request) => {
        validated(EndReservationsRequestSchema, 'endReservations')(request);
        this.refuseTableChangeWhileRebuilding('judged');
      },
      description: 'Sent by the reconciler for deleted StatefulSets (not for operators).',
    });
    setHandler(reservationsQuery, () => this.state.reservations ?? {}, {
      description:
        'Sticky StatefulSet addresses: <namespace>/<statefulset>/<ordinal> → its addresses, and since when no pod holds them. No input.',
    });
    setHandler(poolStateQuery, () => this.carried(), {
      description: 'The whole pool state: its spec and its block table (large). No input.',
    });
    // Input ignored (the UI's query form may send an empty one); a query writes no history.
    setHandler(poolSpecQuery, () => ({ spec: this.state.spec, families: poolFamilies(this.state.spec) }), {
      description:
        "The pool's spec (CIDRs, block sizes, selectors) and address families, without its block table. No input.",
    });
  }

  /**
   * A changed spec cannot be judged while the blocks are being rebuilt (the table is not whole
   * yet): refused as "rebuilding", and the control worker asks again. A validator's refusal writes
   * nothing to history, so older histories replay as they were.
   */
  private refuseWhileRebuilding(spec: PoolState['spec']): void {
    if (this.rebuilding && JSON.stringify(spec) !== JSON.stringify(this.state.spec))
      throw ApplicationFailure.nonRetryable(
        `pool ${spec.name} is rebuilding its blocks; the change is judged once it is done`,
        FailureType.tableRebuilding,
      );
  }

  /**
   * A block given back or moved while the table is rebuilt would be judged on half a table: not
   * found, answered "none returned", and the node drops it while the rebuild has already read it in
   * the node's table (the soak: a pinned block kept for a node that no longer had it, its sticky
   * pod fenced for good). Refused as retryable "rebuilding": the node's activity asks again.
   */
  private refuseTableChangeWhileRebuilding(what: string): void {
    if (this.rebuilding)
      throw ApplicationFailure.retryable(
        `pool ${this.state.spec.name} is rebuilding its blocks; this is ${what} once it is done`,
        FailureType.tableRebuilding,
      );
  }

  carried(): PoolState {
    return { ...this.state, results: this.memory.carry(), trustCarried: this.trusted() };
  }

  details(): void {
    setCurrentDetails(`${Object.keys(this.state.blocks).length} blocks handed out`);
  }

  /** Whether this run's answers can be used (workflows/table-trust). */
  private trusted(): boolean {
    return this.trust.trusted();
  }

  private handOut(request: AcquireBlockRequest): string {
    // Older histories took each request's spec; the pool's own decides now (`configure`).
    if (!patched('pool-owns-spec')) this.state.spec = request.spec;
    if (request.block) return this.handPinned(request, request.block);
    // A block around a sticky reservation is never a node's (domain/sticky-addresses).
    const held = heldWithReservations(this.state.blocks, this.state.reservations);
    const block = freeBlock(held, this.state.spec, request.family);
    if (!block) {
      throw ApplicationFailure.nonRetryable(
        `pool ${this.state.spec.name} has no free IPv${request.family} block left`,
        FailureType.exhausted,
      );
    }
    this.state.blocks[block] = { node: request.node, incarnation: request.incarnation };
    this.details();
    return block;
  }

  /**
   * A static address's one-address block (domain/static-addresses): only where no block covers it
   * (another node's, or its own pinned block of another incarnation); the address must be one the
   * pool could hand out.
   */
  private handPinned(request: AcquireBlockRequest, pinned: string): string {
    const { spec, blocks } = this.state;
    const address = pinned.split('/')[0] ?? '';
    const problem = staticAddressProblem(spec, address);
    if (problem) throw ApplicationFailure.nonRetryable(problem, FailureType.invalidConfig);
    const owner = blocks[pinned];
    if (owner?.node === request.node && owner.incarnation === request.incarnation) return pinned;
    const { reservation: key } = request;
    const held = (why: string) =>
      key
        ? ApplicationFailure.nonRetryable(fenceMessage(key, why), FailureType.stickyAddressFenced)
        : ApplicationFailure.nonRetryable(why, FailureType.staticAddressHeld);
    const reservedFor = reservationOf(this.state.reservations, address);
    if (reservedFor !== undefined && reservedFor !== key)
      throw held(`${address} is reserved for StatefulSet pod ${reservedFor}`);
    const covering = overlappingBlock(Object.keys(blocks), parsePrefix(pinned));
    const holder = covering === undefined ? undefined : blocks[covering];
    if (covering !== undefined && holder)
      throw held(
        `${address} is in block ${covering} of node ${holder.node} (incarnation ${holder.incarnation || 'not observed'}); ` +
          'it comes to this node once that block is back in the pool',
      );
    blocks[pinned] = { node: request.node, incarnation: request.incarnation };
    const reservation = reservedFor === undefined ? undefined : this.state.reservations?.[reservedFor];
    if (reservation) delete reservation.idleSince;
    this.details();
    return pinned;
  }

  /**
   * After a rebuild: a reservation an ordinary node block covers (made on a table that lacked that
   * block: a reset run before its rebuild) ends, or its ordinal's pods would wait for good; the
   * next pod of the ordinal gets new addresses. Then reservations a run lost (terminated, reset)
   * that pods hold now come back, as the pods' addresses are kept.
   */
  private settleReservations(found: Record<string, string[]> | undefined): void {
    this.restoreReservations(found);
    const { spec, blocks } = this.state;
    const ordinary = Object.keys(blocks).filter((b) => !isPinnedBlock(spec, b));
    for (const [key, reservation] of Object.entries(this.state.reservations ?? {})) {
      const covered = reservation.addresses.find(
        (a) => overlappingBlock(ordinary, parsePrefix(pinnedBlockOf(a))) !== undefined,
      );
      if (covered === undefined) continue;
      delete this.state.reservations?.[key];
      log.warn('sticky reservation ended: a node block covers it', { key, address: covered });
    }
  }

  /**
   * Reservations a run lost (terminated, reset): those of the run before it, and those its pods
   * hold now (the evidence). Restored idle from now; a pod that holds one pins it again.
   */
  private restoreReservations(found: Record<string, string[]> | undefined): void {
    for (const [key, addresses] of Object.entries(found ?? {})) {
      const reservations = (this.state.reservations ??= {});
      if (reservations[key]) continue;
      const pinned = addresses.some((a) => this.state.blocks[pinnedBlockOf(a)] !== undefined);
      reservations[key] = pinned ? { addresses } : { addresses, idleSince: Date.now() };
      log.info('sticky reservation restored', { key, addresses });
    }
  }

  /**
   * As a hand-out, a reservation is never judged on a table being rebuilt (the soak: a pool started
   * again reserved addresses in a block a node held, and that ordinal's pods waited behind the
   * fence for good): refused as "rebuilding", and the ADD is tried again. Decided on the state alone
   * when the update arrives (whether the run is verified is not: a replay may see another run id).
   */
  private reserveOnWholeTable(key: string): string[] {
    if (this.rebuilding)
      throw ApplicationFailure.retryable(
        `pool ${this.state.spec.name} is rebuilding its blocks; the reservation is asked for again after`,
        FailureType.tableRebuilding,
      );
    return this.reserve(key);
  }

  /**
   * A StatefulSet ordinal's sticky addresses: those it has, else new ones (one per family), idle
   * until a node pins them. Refused (exhausted) when a family has no address left for it.
   */
  private reserve(key: string): string[] {
    const reservations = (this.state.reservations ??= {});
    const kept = reservations[key];
    if (kept) return kept.addresses;
    const { spec, blocks } = this.state;
    const addresses = poolFamilies(spec).map((family) => {
      const address = stickyCandidate(blocks, reservations, spec, family);
      if (address === undefined)
        throw ApplicationFailure.nonRetryable(
          `pool ${spec.name} has no IPv${family} address left to reserve for StatefulSet pod ${key}`,
          FailureType.exhausted,
        );
      return address;
    });
    reservations[key] = { addresses, idleSince: Date.now() };
    return addresses;
  }

  /** A deleted StatefulSet's idle reservations end now: its ordinals' addresses go back to the pool. */
  private endReservationsOf(statefulSets: string[]): string[] {
    const ended = idleOfDeleted(this.state.reservations, statefulSets);
    for (const key of ended) delete this.state.reservations?.[key];
    if (ended.length) log.info('sticky reservations ended: their StatefulSet is deleted', { keys: ended });
    return ended;
  }

  /** Reservations whose pinned blocks all came back are idle from now (a pod let go of them). */
  private markIdle(returned: string[]): void {
    const reservations = this.state.reservations ?? {};
    for (const block of returned) {
      const key = reservationOf(reservations, block.split('/')[0] ?? '');
      const reservation = key === undefined ? undefined : reservations[key];
      if (!reservation) continue;
      const pinned = reservation.addresses.some((a) => this.state.blocks[pinnedBlockOf(a)] !== undefined);
      if (!pinned) reservation.idleSince = Date.now();
    }
  }

  /**
   * Ends reservations idle for longer than the pool keeps them (`sticky.keepSeconds`), for the
   * run's life. Woken by conditions, which the SDK asks only once an activation's jobs have run,
   * so its timers come after their commands live and on replay alike; a run with no idle
   * reservation issues none.
   */
  async expireIdleReservations(): Promise<never> {
    const next = () => nextExpiry(this.state.reservations, keepMsOf(this.state.spec));
    for (;;) {
      await condition(() => next() !== undefined);
      const at = next() ?? 0;
      // An earlier expiry (a shorter keep, an older idle reservation) wakes it before its timer.
      if (at > Date.now()) await condition(() => (next() ?? Infinity) < at, at - Date.now());
      const keepMs = keepMsOf(this.state.spec);
      for (const key of expiredReservations(this.state.reservations, keepMs, Date.now())) {
        delete this.state.reservations?.[key];
        log.info('sticky reservation ended: idle past its keep time', { key, keepMs });
      }
    }
  }

  /** One hand-out of a batch; a refusal is its answer, so the others get theirs. */
  private async handOutOf(request: BlockRequest): Promise<BlockOutcome> {
    const failed = (message: string, type: string, nonRetryable: boolean, run?: string): BlockOutcome => ({
      id: request.id,
      failure: { message, type, nonRetryable, ...(run ? { run } : {}) },
    });
    if (this.rebuilding)
      return failed('the pool is rebuilding its blocks', FailureType.tableRebuilding, false);
    const unverified = () =>
      failed(
        'the pool table is not verified (reset)',
        FailureType.tableUnverified,
        false,
        workflowInfo().runId,
      );
    // A block cut on a table not vouched for stayed recorded for a node that was told no and never
    // asked again (the soak: a reset run's reapplied request, answered by the run before the reset).
    if (!this.trusted() && patched(UNVERIFIED_HANDS_NOTHING)) return unverified();
    try {
      const block = await this.memory.once(() => this.handOut(request), request.id);
      // Older runs: done either way; only the answer says the table is not vouched for.
      if (!this.trusted()) return unverified();
      return { id: request.id, block };
    } catch (err) {
      if (!(err instanceof ApplicationFailure)) throw err;
      return failed(err.message, err.type ?? FailureType.exhausted, true);
    }
  }

  private takeBack(request: { node: string; incarnation: string; blocks?: string[] }): string[] {
    const held = blocksOf(this.state.blocks, request.node, request.incarnation);
    const returned = !request.blocks
      ? held
      : this.unobservedNamed()
        ? namedBlocksOf(this.state.blocks, request.node, request.incarnation, request.blocks)
        : held.filter((b) => request.blocks?.includes(b));
    for (const block of returned) delete this.state.blocks[block];
    if (this.state.reservations) this.markIdle(returned);
    this.details();
    return returned;
  }

  private move(request: { node: string; from: string; to: string; blocks: string[] }): string[] {
    const moved = this.unobservedNamed()
      ? namedBlocksOf(this.state.blocks, request.node, request.from, request.blocks)
      : blocksOf(this.state.blocks, request.node, request.from).filter((b) => request.blocks.includes(b));
    for (const block of moved) this.state.blocks[block] = { node: request.node, incarnation: request.to };
    return moved;
  }

  /** Histories before it matched named blocks of the node's incarnation only ('' ones stayed for good). */
  private unobservedNamed(): boolean {
    return patched(UNOBSERVED_NAMED_BLOCKS);
  }

  private configure(spec: PoolState['spec'], configuredPools: string[]): PoolState['spec'] {
    this.state.spec = spec;
    this.state.configuredPools = configuredPools;
    upsertMemo({ [CONFIGURED_POOLS_MEMO]: configuredPools });
    return spec;
  }

  beginIfFresh(): Promise<unknown> {
    if (this.input.state || !patched(FRESH_RUN_REBUILD)) return Promise.resolve();
    const why = this.input.restartedAfter
      ? `restarted after ${this.input.restartedAfter}`
      : 'a run without blocks';
    return this.rebuild(workflowInfo().runId, why);
  }

  private rebuild(forRun: string, why: string): Promise<PoolRebuildReport | null> {
    if (this.state.trustedRun === forRun) return Promise.resolve(null);
    this.rebuilding ??= this.gatherAndApply(forRun, why).finally(() => {
      this.rebuilding = undefined;
    });
    return this.rebuilding;
  }

  private async gatherAndApply(forRun: string, why: string): Promise<PoolRebuildReport> {
    const applied = this.trust.rebuilding();
    setCurrentDetails(`rebuilding its blocks from the nodes and leases (${why})`);
    const answer = await poolTableEvidence({ pool: this.state.spec.name, forRun });
    // Recorded before the answer named its run, it was the list alone (histories of v1-issue25).
    const evidence: PoolEvidence = Array.isArray(answer) ? { held: answer as HeldBlockEvidence[] } : answer;
    const report = rebuildBlockTable(this.state.blocks, evidence.held);
    this.settleReservations(evidence.reservations);
    // A hand-out remembered for another node of a block a node's table holds: asked again, it gets another.
    const given = new Set(report.reassigned.map((r) => r.block));
    this.memory.forgetWhere((_, result) => typeof result === 'string' && given.has(result));
    // As node/rebuild: the run the recorded answer names; the table is vouched for until a reset.
    this.state.trustedRun = evidence.forRun;
    applied();
    if (report.duplicates.length)
      log.error('pool blocks rebuilt: blocks held twice', { duplicates: report.duplicates });
    log.info('pool blocks rebuilt', {
      why,
      added: report.added.length,
      reassigned: report.reassigned.length,
    });
    this.details();
    return report;
  }
}
