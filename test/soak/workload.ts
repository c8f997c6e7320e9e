// The soak's workload: pods created, bound and deleted at a steady rate on every node, and the
// CNI calls a runtime makes for them through the real shim: ADD (retried after an error, as the
// kubelet does, and sometimes repeated), DEL (sometimes repeated, sometimes without an ADD
// before it), in ptp and ipam mode, with and without pre-produce. Deletions are graceful, grace 0
// or held by a finalizer; some pods never become Running, some are deleted before their ADD; some
// names come back with a new UID, as a StatefulSet does. A node's machine can go two ways: with
// its pods (force-deleted, their lifecycles abandoned), or keeping them, when the kubelet of the
// machine that registers under the name runs each living pod again (a new sandbox, the same pod
// UID: its ADD must answer the addresses told before). The ledger (`told`) is what each runtime
// was told, the checker's "nothing lost"; every answer also goes to the answer history. A few pods
// are a StatefulSet's ordinals that keep their addresses (sticky: each ordinal's pods come and go,
// the fence between them), a few ask for one of a handful of static addresses (they wait for
// each other), and some select a second pool by annotation, which only zone b's nodes may take (its
// node selector); the answer history checks all three promises.
import { randomBytes } from 'node:crypto';
import { ip } from '../../kernel/ip';
import { findLink, globalAddresses } from '../../kernel/links';
import { POOLS_ANNOTATION } from '../../domain/pool-selection';
import type { AnswerLog } from './answers';
import { Pods, type Deletion, type PodExtras } from './pods';
import { SELECTED_POOL } from './pools';
import type { Random } from './random';
import { CniRuntime, sameAddresses, type Sandbox } from './runtime';
import type { SoakNode, SoakStack } from './stack';

export { SOAK_NAMESPACE } from './pods';

/** A pod whose ADD succeeded and whose deletion has not begun: what its runtime was told. */
export interface Told {
  podUid: string;
  podName: string;
  node: string;
  mode: SoakNode['mode'];
  netns: string;
  addresses: string[];
  /** Its machine went with the pod kept: the lease must hold on, the interface comes with the re-run. */
  rerunning?: boolean;
}

export interface WorkloadStats {
  started: number;
  completed: number;
  abandoned: number;
  adds: number;
  addErrors: Record<string, number>;
  repeatedAdds: number;
  dels: number;
  delErrors: Record<string, number>;
  repeatedDels: number;
  delsWithoutAdd: number;
  neverRunning: number;
  deletedBeforeAdd: number;
  recreatedNames: number;
  /** Pods run again in a new sandbox by the kubelet of a machine that took over the node's name. */
  reruns: number;
  deletions: Record<Deletion, number>;
  /** A repeated or re-run ADD that answered other addresses, or a DEL that failed for good. */
  broken: string[];
  /** Errors per verb, code and the reason their message names first (`ADD 11 table-rebuilding`). */
  errorReasons: Record<string, number>;
  /** The first few error messages per code, to read what the errors were. */
  errorSamples: Record<string, string[]>;
}

const emptyStats = (): WorkloadStats => ({
  started: 0,
  completed: 0,
  abandoned: 0,
  adds: 0,
  addErrors: {},
  repeatedAdds: 0,
  dels: 0,
  delErrors: {},
  repeatedDels: 0,
  delsWithoutAdd: 0,
  neverRunning: 0,
  deletedBeforeAdd: 0,
  recreatedNames: 0,
  reruns: 0,
  deletions: { now: 0, graceful: 0, finalizer: 0 },
  broken: [],
  errorReasons: {},
  errorSamples: {},
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** How long a runtime retries a pod's ADD before the soak counts it as never answered. */
const ADD_DEADLINE_MS = 120_000;
/** A sticky or static pod may wait for another pod's sandbox to go (the fence; a node's fault). */
const KEPT_ADD_DEADLINE_MS = 300_000;

/** The sticky StatefulSet (its ordinals 0..STICKY_ORDINALS-1) and the static addresses asked for. */
const STICKY_SET = 'db';
const STICKY_ORDINALS = 6;
/** In the soak pool's last IPv4 block, which no node's blocks reach in a run. */
const STATIC_ADDRESSES = ['198.18.15.200', '198.18.15.201', '198.18.15.202'];

/** What a new pod is: plain, a sticky ordinal, one asking for a static address, or for the second pool. */
interface PodShape {
  name?: string;
  extras: PodExtras;
  sticky?: string;
  asked?: string[];
  /** The second pool, selected by the pod's annotation: it runs on a zone-b node only. */
  pool?: string;
}

/** One pod's life as its lane drives it. */
interface PodRun {
  uid: string;
  name: string;
  node: SoakNode;
  /** The node's `lost` generation at creation: a machine that took the pods with it ends the run. */
  lostGeneration: number;
  sandbox: Sandbox;
  /** What its runtime was told, once an ADD succeeded. */
  told?: string[];
  /** The deletion began: a new machine's kubelet no longer runs it. */
  deleting: boolean;
  /** Its runtime called ADD (a pod deleted while Pending gets no DEL either). */
  added: boolean;
  /** The kubelet of a new machine running it again: its other runtime calls wait for that. */
  rerun?: Promise<void>;
  /** When its deletion begins (once Running): a moved node's fault picks a pod that outlives it. */
  aliveUntil?: number;
  shape: PodShape;
}

/** A node's machine: `machine` changes with every new machine; `lost` when the pods went with it. */
interface NodeMachine {
  machine: number;
  lost: number;
  down: boolean;
}

export class Workload {
  readonly stats = emptyStats();
  /** podUid → what its runtime was told. */
  readonly ledger = new Map<string, Told>();
  /** podUid → the sandbox namespace the runtime made, until it removes it. */
  readonly sandboxes = new Map<string, string>();
  readonly pods: Pods;
  private readonly runtime: CniRuntime;
  private readonly machines = new Map<string, NodeMachine>();
  private readonly runs = new Map<string, PodRun>();
  private serial = 0;

  constructor(
    private readonly stack: SoakStack,
    private readonly random: Random,
    readonly answers: AnswerLog,
  ) {
    this.pods = new Pods(stack);
    this.runtime = new CniRuntime(this.stats, random);
  }

  private machineOf(node: SoakNode): NodeMachine {
    let machine = this.machines.get(node.name);
    if (!machine) this.machines.set(node.name, (machine = { machine: 0, lost: 0, down: false }));
    return machine;
  }

  /**
   * The node's machine is going away. Its pods go with it (`podsKept` false: their lifecycles are
   * abandoned) or stay bound to the name for the next machine's kubelet to run again. Returns the
   * sandboxes that were on it (gone with the machine).
   */
  machineGone(node: SoakNode, podsKept: boolean): string[] {
    const machine = this.machineOf(node);
    machine.machine++;
    machine.down = true;
    if (!podsKept) machine.lost++;
    for (const [uid, told] of this.ledger) {
      if (told.node !== node.name) continue;
      if (podsKept) told.rerunning = true;
      else this.ledger.delete(uid);
    }
    return [...this.runs.values()].filter((r) => r.node === node).map((r) => r.sandbox.netns);
  }

  /** How long the longest-lived told pod on `node` has left before its deletion begins (ms; 0: none). */
  lifeLeftOn(node: SoakNode): number {
    const now = Date.now();
    const left = [...this.runs.values()]
      .filter((r) => r.node === node && r.told && !r.deleting && r.aliveUntil !== undefined)
      .map((r) => (r.aliveUntil as number) - now);
    return Math.max(0, ...left);
  }

  /** The new machine's kubelet runs every living pod that had an answer again, at once. */
  machineBack(node: SoakNode): void {
    this.machineOf(node).down = false;
    for (const run of this.runs.values())
      if (run.node === node && run.told && !run.deleting) this.startRerun(run);
  }

  /** Runs lifecycles, `inFlight` at once, until `total` began or `goOn` says to stop. */
  async run(total: number, inFlight: number, goOn: () => boolean): Promise<void> {
    const lane = async () => {
      let again: string | undefined;
      while (this.stats.started < total && goOn()) {
        this.stats.started++;
        // A lifecycle cut by an error (its pod is deleted at the drain) fails the run, not the lane.
        again = await this.lifecycle(again).catch((err: unknown) => {
          this.stats.broken.push(`lifecycle failed: ${err instanceof Error ? err.message : String(err)}`);
          return undefined;
        });
      }
    };
    await Promise.all(Array.from({ length: inFlight }, lane));
  }

  /** One pod's life; returns its name when the next lifecycle of the lane should reuse it. */
  private async lifecycle(name?: string): Promise<string | undefined> {
    const shape: PodShape = name ? { extras: {} } : this.newShape();
    // As the scheduler places a pod whose pool's node selector it mirrors (a pod nodeSelector).
    const up = this.stack.nodes.filter((n) => !this.machineOf(n).down && (!shape.pool || n.zone === 'b'));
    if (up.length === 0) {
      await pause(500);
      return undefined;
    }
    const node = this.random.pick(up);
    const podName = name ?? shape.name ?? `pod-${++this.serial}`;
    if (name) this.stats.recreatedNames++;
    const deletion = this.random.pick(['now', 'graceful', 'finalizer'] as const);
    const uid = await this.pods
      .create(podName, node.name, deletion === 'finalizer', shape.extras)
      .catch(() => undefined);
    if (!uid) return undefined; // the name is still Terminating, or the node went: next one
    const run: PodRun = {
      uid,
      name: podName,
      node,
      lostGeneration: this.machineOf(node).lost,
      sandbox: await this.newSandbox(uid, node),
      deleting: false,
      added: false,
      shape,
    };
    this.runs.set(uid, run);
    try {
      await this.live(run);
      await this.teardown(run, deletion);
    } finally {
      this.runs.delete(uid);
      await ip(undefined, ['netns', 'del', run.sandbox.netns]).catch(() => undefined);
      this.sandboxes.delete(uid);
    }
    if (this.gone(run)) this.stats.abandoned++;
    else this.stats.completed++;
    return !shape.name && this.random.chance(0.15) ? podName : undefined;
  }

  /**
   * Mostly plain; 8 % a sticky ordinal (its name: the ordinal's), 4 % asking for a static address,
   * 10 % selecting the second pool by annotation.
   */
  private newShape(): PodShape {
    const roll = this.random.int(0, 99);
    if (roll < 8) {
      const ordinal = this.random.int(0, STICKY_ORDINALS - 1);
      const annotations = { 'netlease.io/sticky-addresses': 'true' };
      return {
        name: `${STICKY_SET}-${ordinal}`,
        extras: { annotations, statefulSet: STICKY_SET },
        sticky: `soak/${STICKY_SET}/${ordinal}`,
      };
    }
    if (roll < 12) {
      const address = this.random.pick(STATIC_ADDRESSES);
      return { extras: { annotations: { 'netlease.io/ip-addresses': address } }, asked: [address] };
    }
    if (roll < 22)
      return { extras: { annotations: { [POOLS_ANNOTATION]: SELECTED_POOL } }, pool: SELECTED_POOL };
    return { extras: {} };
  }

  /** From the sandbox to the deletion: ADD (and maybe a repeat), Running, a while alive. */
  private async live(run: PodRun): Promise<void> {
    if (this.random.chance(0.03)) {
      // Deleted while Pending, before any ADD: a pre-produced offer is revoked.
      this.stats.deletedBeforeAdd++;
      await pause(this.random.int(200, 2000));
      return;
    }
    run.added = true;
    if (this.random.chance(0.05) && (await this.onCurrentMachine(run)))
      await this.runtime.delWithoutAdd(this.podCall(run), run.node);
    const addresses = await this.addUntilAnswered(run);
    if (!addresses || this.gone(run)) return;
    run.told = addresses;
    this.ledger.set(run.uid, this.toldOf(run));
    if (this.random.chance(0.2) && (await this.onCurrentMachine(run))) {
      const again = await this.runtime.repeatAdd(this.podCall(run), run.node, addresses);
      if (again) this.answered(run, again);
    }
    if (this.random.chance(0.85)) await this.pods.setRunning(run.name).catch(() => undefined);
    else this.stats.neverRunning++;
    // Most live a moment; some long enough that a node's machine changes under them.
    const lifeMs = this.random.chance(0.15) ? this.random.int(5000, 30_000) : this.random.int(200, 2000);
    run.aliveUntil = Date.now() + lifeMs;
    await pause(lifeMs);
  }

  /**
   * ADD until it succeeds on the pod's current machine (a new machine's sandbox made first); the
   * pod's machine going with it, or its deletion beginning before a new sandbox, ends it.
   */
  private async addUntilAnswered(run: PodRun): Promise<string[] | undefined> {
    const kept = run.shape.sticky !== undefined || run.shape.asked !== undefined;
    const deadlineMs = kept ? KEPT_ADD_DEADLINE_MS : ADD_DEADLINE_MS;
    const deadline = Date.now() + deadlineMs;
    while (Date.now() < deadline) {
      // Its machine went with it; or, run again, its deletion began: the kubelet stops trying.
      if (this.gone(run) || (run.deleting && run.told)) return undefined;
      const machine = this.machineOf(run.node);
      if (machine.down) {
        await pause(200);
        continue;
      }
      if (run.sandbox.machine !== machine.machine) {
        if (run.deleting) return undefined;
        await ip(undefined, ['netns', 'del', run.sandbox.netns]).catch(() => undefined);
        run.sandbox = await this.newSandbox(run.uid, run.node);
      }
      const addresses = await this.runtime.add(this.podCall(run), run.node);
      // An answer that came back after its machine went reached nobody: the next machine asks again.
      if (addresses && run.sandbox.machine === this.machineOf(run.node).machine) {
        this.answered(run, addresses);
        await this.answerIsTrue(run, addresses);
        return addresses;
      }
      if (!addresses) await pause(this.random.int(300, 1000));
    }
    this.stats.broken.push(
      `ADD of pod ${run.name} (${run.uid}) on ${run.node.name} unanswered for ${deadlineMs / 1000} s`,
    );
    return undefined;
  }

  /**
   * Whether the pod's runtime can be called now: false when its machine went with it, or went and
   * its deletion began (the new machine's kubelet does not run it). Waits while its node has no
   * machine, and while the kubelet runs it again.
   */
  private async onCurrentMachine(run: PodRun): Promise<boolean> {
    for (;;) {
      if (this.gone(run)) return false;
      if (run.rerun) {
        await run.rerun;
        continue;
      }
      const machine = this.machineOf(run.node);
      if (!machine.down && run.sandbox.machine === machine.machine) return true;
      if (!machine.down && (run.deleting || !run.told)) return false;
      if (!machine.down) this.startRerun(run);
      else await pause(200);
    }
  }

  private startRerun(run: PodRun): void {
    run.rerun ??= this.rerun(run).finally(() => (run.rerun = undefined));
  }

  /** The new machine's kubelet runs the pod again: a new sandbox whose ADD must answer what it was told. */
  private async rerun(run: PodRun): Promise<void> {
    const told = run.told ?? [];
    this.stats.reruns++;
    const addresses = await this.addUntilAnswered(run);
    // A pod deleted meanwhile may get other addresses (its lease may have ended): no promise then.
    if (!addresses || run.deleting) return;
    if (!sameAddresses(addresses, told))
      this.stats.broken.push(
        `pod ${run.name} (${run.uid}) run again on ${run.node.name} answered ${addresses.join()} after ${told.join()}`,
      );
    if (this.ledger.has(run.uid)) this.ledger.set(run.uid, this.toldOf(run));
  }

  /** The deletion as a cluster makes it, the runtime's DEL in its place (none once its machine went). */
  private async teardown(run: PodRun, deletion: Deletion): Promise<void> {
    this.stats.deletions[deletion]++;
    this.ledger.delete(run.uid);
    run.deleting = true;
    await this.pods.remove(run.name, run.uid, deletion === 'now' ? 0 : undefined);
    if (deletion === 'now') this.answers.ended(run.uid, 'removed');
    if (run.added && (await this.onCurrentMachine(run))) {
      if (await this.runtime.del(this.podCall(run), run.node)) this.answers.ended(run.uid, 'del');
      if (this.random.chance(0.2)) {
        this.stats.repeatedDels++;
        await this.runtime.del(this.podCall(run), run.node);
      }
    }
    await this.pods.remove(run.name, run.uid, 0);
    if (deletion === 'finalizer') await this.pods.clearFinalizer(run.name, run.uid);
    this.answers.ended(run.uid, 'removed');
  }

  /** The pods the workload has on `node` now: the pod GC force-deletes them when the node goes. */
  podsOn(node: SoakNode): Array<{ name: string; uid: string }> {
    return [...this.runs.values()].filter((r) => r.node === node).map((r) => ({ name: r.name, uid: r.uid }));
  }

  /** A pod removed by someone else (the pod GC, the drain): its addresses' use ends. */
  removed(uid: string): void {
    this.answers.ended(uid, 'removed');
  }

  private gone(run: PodRun): boolean {
    return this.machineOf(run.node).lost !== run.lostGeneration;
  }

  private answered(run: PodRun, addresses: string[]): void {
    this.answers.answered({
      podUid: run.uid,
      podName: run.name,
      node: run.node.name,
      containerId: run.sandbox.containerId,
      netns: run.sandbox.netns,
      addresses,
      ...(run.shape.asked ? { asked: run.shape.asked } : {}),
      ...(run.shape.sticky ? { sticky: run.shape.sticky } : {}),
      ...(run.shape.pool ? { pool: run.shape.pool } : {}),
    });
  }

  /**
   * Every answer is true when the call returns: a ptp ADD's eth0 carries what it answered (read
   * back at once, before anything else of the pod's happens). Not judged once the pod's machine
   * went meanwhile (its sandboxes are deleted with it).
   */
  private async answerIsTrue(run: PodRun, addresses: string[]): Promise<void> {
    if (run.node.mode !== 'ptp') return;
    const { netns, containerId } = run.sandbox;
    const read = await findLink(netns, 'eth0').then(
      (link) => ({ link }),
      () => undefined, // the namespace could not be read: nothing to judge by
    );
    if (!read || run.sandbox.machine !== this.machineOf(run.node).machine) return;
    const carried = read.link ? globalAddresses(read.link).map((a) => a.split('/')[0] ?? '') : [];
    if (!sameAddresses(carried, addresses))
      this.stats.broken.push(
        `ADD of ${containerId} (pod ${run.name}) answered ${addresses.join()}, but eth0 in ${netns} carries ${carried.join() || 'nothing'}`,
      );
  }

  private toldOf(run: PodRun): Told {
    return {
      podUid: run.uid,
      podName: run.name,
      node: run.node.name,
      mode: run.node.mode,
      netns: run.sandbox.netns,
      addresses: run.told ?? [],
    };
  }

  private async newSandbox(uid: string, node: SoakNode): Promise<Sandbox> {
    const netns = `soakp-${randomBytes(5).toString('hex')}`;
    await ip(undefined, ['netns', 'add', netns]);
    this.sandboxes.set(uid, netns);
    return {
      netns,
      containerId: `ctr-${randomBytes(6).toString('hex')}`,
      machine: this.machineOf(node).machine,
    };
  }

  private podCall(run: PodRun) {
    return {
      netns: `/var/run/netns/${run.sandbox.netns}`,
      ifName: 'eth0',
      containerId: run.sandbox.containerId,
      args: { K8S_POD_NAMESPACE: 'soak', K8S_POD_NAME: run.name, K8S_POD_UID: run.uid },
    };
  }
}
