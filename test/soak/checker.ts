// The soak's independent checker. It shares no code with the allocator: it reads Kubernetes
// (quorum lists), Temporal (visibility, and each lease's `state` query by name, parsed with its own
// schema) and the kernel (`ip -json`, run here), and judges what it read by the invariants alone:
// - no address allocated twice across the node tables, held by two live leases, or configured in
//   two live pods' namespaces (any sample);
// - nothing lost: a pod whose ADD succeeded keeps its lease, with the addresses its runtime was
//   told, and (ptp) its interface carrying them;
// - every Active/Running ptp lease has its interface in the kernel with its addresses;
// - no leak: an address is held only by a lease whose pod exists, or for at most LEAK_BOUND_MS;
// - no workflow Failed, Terminated, TimedOut or Canceled, except runs an operator closed on purpose.
// Soft findings (a lease still being released, an interface being made) become violations only
// when they outlast their bound (longer for a lease an operator closed: the reconciler brings it
// back). A read that fails makes the sample incomplete, never a pass. Faults report what they saw
// themselves (an operator's message not refused), and the end of the run the answer history and
// the workflow tasks that failed (soak.ts).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { CoreV1Api } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { z } from 'zod';
import { blockDisagreements } from './block-agreement';
import type { CheckerEar } from './fault-context';
import { SDK_UPDATE_ORDER } from './histories';
import type { Told } from './workload';

export const INVARIANTS = [
  'duplicate-table',
  'duplicate-lease',
  'duplicate-kernel',
  /** The answer history: one address answered to two pods whose use of it overlapped. */
  'duplicate-answer',
  /** A sticky StatefulSet ordinal answered other addresses than before, or a static address not given. */
  'kept-address',
  'lost',
  'ptp-interface',
  'leaked',
  'workflow-failed',
  /** A workflow task failed by the workflow's own doing (it stops the workflow without closing it). */
  'workflow-task-failed',
  /** An operator's action not handled as documented (a bad message applied, an unsafe config taken). */
  'operator',
  /** A process that exited without being stopped (its Deployment or DaemonSet would restart it). */
  'crashed',
] as const;
export type Invariant = (typeof INVARIANTS)[number];

/** How long a soft finding may last before it is a violation. */
const BOUND_MS: Partial<Record<Invariant, number>> = {
  lost: 20_000,
  'ptp-interface': 30_000,
  // A control worker killed mid-reconcile holds the next run for the activity's 60-s heartbeat
  // timeout, and pods deleted while no worker watched wait for that run (plus the 5-s second look).
  leaked: 120_000,
};

const LeaseViewSchema = z.object({
  phase: z.string(),
  start: z.object({ podUid: z.string(), nodeName: z.string(), mode: z.string() }),
  addresses: z.array(z.object({ address: z.string() })),
  attachments: z.array(
    z.object({ containerId: z.string(), netns: z.string(), ifName: z.string(), status: z.string() }),
  ),
});
type LeaseView = z.infer<typeof LeaseViewSchema> & { workflowId: string };

const NodeTablesSchema = z.object({
  tables: z.record(
    z.string(),
    z.object({ allocations: z.record(z.string(), z.object({ owner: z.string() })) }),
  ),
});

const AddrSchema = z.array(
  z.object({
    ifname: z.string(),
    addr_info: z.array(z.object({ local: z.string(), scope: z.string().optional() })).default([]),
  }),
);

export interface Finding {
  invariant: Invariant;
  /** What it is about (an address, a pod); with the invariant, the finding's identity. */
  subject: string;
  detail: string;
  /** Workflow ids whose histories explain it. */
  workflows: string[];
  /** For a duplicate: who holds the subject (lease ids, node names or pod UIDs), to confirm it. */
  holders?: string[];
}

export interface Sample {
  complete: boolean;
  /** Why it is incomplete. */
  unreadable?: string;
  findings: Finding[];
  leases: number;
  addresses: number;
}

/** `ip -json addr show` inside a namespace (by name); undefined when it is not there. */
function addressesIn(netns: string): Promise<Map<string, string[]> | undefined> {
  return new Promise((resolve) => {
    execFile('ip', ['-json', '-n', netns, 'addr', 'show'], { timeout: 10_000 }, (err, stdout) => {
      if (err) return resolve(undefined);
      const links = AddrSchema.parse(stdout.trim() ? JSON.parse(stdout) : []);
      resolve(
        new Map(
          links.map((l) => [
            l.ifname,
            l.addr_info.filter((a) => a.scope !== 'link' && a.scope !== 'host').map((a) => a.local),
          ]),
        ),
      );
    });
  });
}

/**
 * A lease holds its addresses until it begins to release them: a Releasing lease's interfaces are
 * gone and its addresses may already be back in the node's table (its returnAddresses attempt
 * went through, the answer was lost with a killed worker) and handed to another pod. The tables
 * are checked for that on their own (duplicate-table).
 */
const holding = (lease: LeaseView) =>
  !['Releasing', 'Released'].includes(lease.phase) && lease.addresses.length > 0;
const sameSet = (a: string[], b: string[]) => [...a].sort().join() === [...b].sort().join();
const leaseOf = (podUid: string) => `lease/${podUid}/eth0`;

export interface CheckerSources {
  client: Client;
  core: CoreV1Api;
  namespace: string;
  taskQueue: string;
  /** The nodes whose tables (`node/<name>` workflows) are read. */
  nodes: () => string[];
  /** The runtime's side: pods told addresses, and their sandbox namespaces. */
  ledger: ReadonlyMap<string, Told>;
  sandboxes: ReadonlyMap<string, string>;
}

export class Checker implements CheckerEar {
  samples = 0;
  /** Open leases visibility had not listed yet, read by id for a pod the runtime was told about. */
  unlisted = 0;
  incomplete = 0;
  /** invariant → violations (each finding counted once). */
  readonly violations = new Map<Invariant, Finding[]>();
  private readonly firstSeen = new Map<string, number>();
  /** Workflow id → since when an operator closes its runs (terminate, reset). */
  private readonly closedByOperator = new Map<string, number>();
  /** Subject → until when its soft findings are no violation. */
  private readonly graceUntil = new Map<string, number>();

  constructor(private readonly sources: CheckerSources) {}

  operatorCloses(workflowId: string): void {
    if (!this.closedByOperator.has(workflowId)) this.closedByOperator.set(workflowId, Date.now());
  }

  grace(subject: string, ms: number): void {
    this.graceUntil.set(subject, Math.max(this.graceUntil.get(subject) ?? 0, Date.now() + ms));
  }

  violation(finding: Finding): void {
    if (!this.isRecorded(finding)) this.record(finding);
  }

  /** One sample; its hard findings and its soft ones past their bound are recorded as violations. */
  async sample(): Promise<Sample> {
    this.samples++;
    let sample: Sample;
    try {
      sample = await this.read();
    } catch (err) {
      sample = { complete: false, unreadable: String(err), findings: [], leases: 0, addresses: 0 };
    }
    if (!sample.complete) {
      this.incomplete++;
      return sample;
    }
    this.judge(sample.findings);
    return sample;
  }

  private judge(findings: Finding[]): void {
    const now = Date.now();
    const seen = new Set<string>();
    for (const finding of findings) {
      const key = `${finding.invariant}:${finding.subject}`;
      seen.add(key);
      const first = this.firstSeen.get(key) ?? now;
      this.firstSeen.set(key, first);
      const bound = BOUND_MS[finding.invariant];
      const graced = bound !== undefined && (this.graceUntil.get(finding.subject) ?? 0) > now;
      if (now - first >= (bound ?? 0) && !graced && !this.isRecorded(finding)) this.record(finding);
    }
    for (const key of [...this.firstSeen.keys()]) if (!seen.has(key)) this.firstSeen.delete(key);
  }

  private isRecorded(finding: Finding): boolean {
    return (this.violations.get(finding.invariant) ?? []).some((f) => f.subject === finding.subject);
  }

  private record(finding: Finding): void {
    this.violations.set(finding.invariant, [...(this.violations.get(finding.invariant) ?? []), finding]);
  }

  get violationCount(): number {
    return [...this.violations.values()].reduce((n, list) => n + list.length, 0);
  }

  /**
   * Converged: a complete sample whose findings are all younger than `transientMs` (the workload's
   * own churn: a pod deleted a moment ago whose lease is being released). Hard findings never are.
   */
  settled(sample: Sample, transientMs = 5000): boolean {
    const now = Date.now();
    return (
      sample.complete &&
      sample.findings.every((f) => {
        const first = this.firstSeen.get(`${f.invariant}:${f.subject}`) ?? now;
        return BOUND_MS[f.invariant] !== undefined && now - first < transientMs;
      })
    );
  }

  private async read(): Promise<Sample> {
    const { client, core, namespace, taskQueue, ledger, sandboxes } = this.sources;
    const toldBefore = new Map(ledger);
    const pods = new Set(
      (await core.listNamespacedPod({ namespace })).items.map((p) => p.metadata?.uid ?? ''),
    );
    const leases = await this.openLeases(
      client,
      taskQueue,
      [...ledger.values()].map((t) => leaseOf(t.podUid)),
    );
    const kernel: Kernel = new Map(
      await inParallel(
        [...sandboxes],
        async ([uid, netns]) => [uid, { netns, links: await addressesIn(netns) }] as const,
      ),
    );
    const tables = await this.tables(client);
    const duplicates = [
      ...duplicateTables(tables),
      ...duplicateLeases(leases),
      ...duplicateKernel(kernel, pods),
    ];
    const findings = [
      ...(await this.confirmed(duplicates)),
      ...lost(toldThrough(toldBefore, ledger), leases, kernel),
      ...(await ptpInterfaces(leases)),
      ...leaked(leases, pods),
      ...(await failedWorkflows(client, taskQueue, this.closedByOperator)),
    ];
    const addresses = leases.filter(holding).reduce((n, l) => n + l.addresses.length, 0);
    return { complete: true, findings, leases: leases.length, addresses };
  }

  /**
   * A sample reads its parts one after another, not at one instant: a lease read holding an
   * address and another read holding it a second later may never have held it together (the first
   * released it in between; seen in the long soak). A duplicate counts only when the first holder
   * is read holding it again after the second was: holding only ever stops, so both held it when
   * the second was read.
   */
  private async confirmed(duplicates: Finding[]): Promise<Finding[]> {
    const held: Finding[] = [];
    for (const finding of duplicates) {
      const [first = '', second = ''] = finding.holders ?? [];
      const holds = (holder: string) => this.holds(finding.invariant, holder, finding.subject);
      if ((await holds(first)) && (await holds(second)) && (await holds(first))) held.push(finding);
    }
    return held;
  }

  /** Whether `holder` (a lease id, a node name or a pod UID) holds `address` now. */
  private async holds(invariant: Invariant, holder: string, address: string): Promise<boolean> {
    const { client, sandboxes } = this.sources;
    if (invariant === 'duplicate-lease') {
      const lease = LeaseViewSchema.parse(await client.workflow.getHandle(holder).query('state'));
      return holding({ ...lease, workflowId: holder }) && lease.addresses.some((a) => a.address === address);
    }
    if (invariant === 'duplicate-table') return (await this.tableOf(client, holder)).has(address);
    const netns = sandboxes.get(holder);
    const links = netns ? await addressesIn(netns) : undefined;
    return [...(links?.values() ?? [])].flat().includes(address);
  }

  /** Allocations in the node tables, per node (what must be none once every pod is gone). */
  async allocations(): Promise<Map<string, number>> {
    const tables = await this.tables(this.sources.client);
    return new Map([...tables].map(([node, owners]) => [node, owners.size]));
  }

  /** Where the pools and the nodes' tables disagree on a node's blocks (./block-agreement). */
  blockDisagreements(pools: string[]): Promise<string[]> {
    return blockDisagreements(this.sources.client, this.sources.nodes(), pools);
  }

  /** node → address → owner lease id, from each node workflow's `state` query. */
  private async tables(client: Client): Promise<Map<string, Map<string, string>>> {
    const read = new Map<string, Map<string, string>>();
    for (const node of this.sources.nodes()) read.set(node, await this.tableOf(client, node));
    return read;
  }

  /**
   * A node's table as its open run holds it. A closed run's (an operator terminated it, and no
   * allocation on the node has started it again) holds nothing: the next run rebuilds its table
   * from the open leases, so what the closed one lists is neither held nor a duplicate.
   */
  private async tableOf(client: Client, node: string): Promise<Map<string, string>> {
    const handle = client.workflow.getHandle(`node/${node}`);
    const owners = new Map<string, string>();
    if ((await handle.describe()).status.name !== 'RUNNING') return owners;
    const state = NodeTablesSchema.parse(await handle.query('state'));
    for (const table of Object.values(state.tables))
      for (const [address, allocation] of Object.entries(table.allocations))
        owners.set(address, allocation.owner);
    return owners;
  }

  /**
   * The open leases visibility lists, and those of `expected` it does not list yet, read by id
   * (their ids are deterministic): visibility lags a loaded server by tens of seconds (the soak saw
   * two Running leases unlisted for 30 s), and a lease is lost only if its workflow is.
   */
  private async openLeases(client: Client, taskQueue: string, expected: string[]): Promise<LeaseView[]> {
    const query = `TaskQueue = '${taskQueue}' AND WorkflowType = 'leaseWorkflow' AND ExecutionStatus = 'Running'`;
    const listed = new Set<string>();
    for await (const execution of client.workflow.list({ query })) listed.add(execution.workflowId);
    const unlisted = expected.filter((id) => !listed.has(id));
    const views = await inParallel(
      [...listed, ...unlisted],
      async (workflowId): Promise<LeaseView | undefined> => {
        const handle = client.workflow.getHandle(workflowId);
        try {
          return { ...LeaseViewSchema.parse(await handle.query('state')), workflowId };
        } catch (err) {
          // Closed since it was listed (or never started): nothing held by it. Anything else fails the read.
          const description = await handle.describe().catch((e: unknown) => {
            if (e instanceof WorkflowNotFoundError) return undefined;
            throw e;
          });
          if (description?.status.name === 'RUNNING') throw err;
          return undefined;
        }
      },
    );
    this.unlisted += views.filter((v, i) => v !== undefined && i >= listed.size).length;
    return views.filter((v): v is LeaseView => v !== undefined);
  }
}

/** `read` over `items`, a few at a time (the reads are queries the control worker answers). */
async function inParallel<T, R>(items: T[], read: (item: T) => Promise<R>, width = 8): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < items.length; i = next++) results[i] = await read(items[i] as T);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  return results;
}

function duplicateTables(tables: Map<string, Map<string, string>>): Finding[] {
  const where = new Map<string, Array<{ node: string; owner: string }>>();
  for (const [node, owners] of tables)
    for (const [address, owner] of owners)
      where.set(address, [...(where.get(address) ?? []), { node, owner }]);
  return [...where]
    .filter(([, holders]) => holders.length > 1)
    .map(([address, holders]) => ({
      invariant: 'duplicate-table' as const,
      subject: address,
      detail: `${address} allocated to ${holders.map((h) => `${h.owner} on ${h.node}`).join(' and ')}`,
      workflows: [...holders.map((h) => h.owner), ...holders.map((h) => `node/${h.node}`)],
      holders: holders.map((h) => h.node),
    }));
}

function duplicateLeases(leases: LeaseView[]): Finding[] {
  const owners = new Map<string, string[]>();
  for (const lease of leases.filter(holding))
    for (const { address } of lease.addresses)
      owners.set(address, [...(owners.get(address) ?? []), lease.workflowId]);
  return [...owners]
    .filter(([, ids]) => ids.length > 1)
    .map(([address, ids]) => ({
      invariant: 'duplicate-lease' as const,
      subject: address,
      detail: `${address} held by ${ids.join(' and ')}`,
      workflows: ids,
      holders: ids,
    }));
}

/** A pod's sandbox as read: its namespace, and the addresses on each link (undefined: it is gone). */
type Kernel = Map<string, { netns: string; links: Map<string, string[]> | undefined }>;

/**
 * What the runtime was told before the sample began and still is as it ends (the same entry): a
 * sample reads leases and kernel over seconds, and an entry set meanwhile (a sandbox run again
 * answered) was read half before it (the soak's seed 795915740: the new sandbox's eth0 read
 * before its ADD answered, judged against the answer).
 */
const toldThrough = (before: ReadonlyMap<string, Told>, after: ReadonlyMap<string, Told>): Told[] =>
  [...after].filter(([uid, told]) => before.get(uid) === told).map(([, told]) => told);

function duplicateKernel(kernel: Kernel, pods: Set<string>): Finding[] {
  const where = new Map<string, string[]>();
  for (const [uid, { links }] of kernel) {
    if (!pods.has(uid) || !links) continue;
    for (const address of [...links.values()].flat())
      where.set(address, [...(where.get(address) ?? []), uid]);
  }
  return [...where]
    .filter(([, uids]) => uids.length > 1)
    .map(([address, uids]) => ({
      invariant: 'duplicate-kernel' as const,
      subject: address,
      detail: `${address} configured in the namespaces of pods ${uids.join(' and ')}`,
      workflows: uids.map(leaseOf),
      holders: uids,
    }));
}

function lost(ledger: Told[], leases: LeaseView[], kernel: Kernel): Finding[] {
  const byId = new Map(leases.map((l) => [l.workflowId, l]));
  const findings: Finding[] = [];
  for (const told of ledger) {
    const lease = byId.get(leaseOf(told.podUid));
    const read = kernel.get(told.podUid);
    // The told sandbox's eth0, as read (another sandbox's reading says nothing about it).
    const eth0 = read?.netns === told.netns ? (read.links?.get('eth0') ?? []) : undefined;
    const problem = !lease
      ? 'no open lease'
      : !holding(lease)
        ? `lease ${lease.phase}`
        : !sameSet(
              lease.addresses.map((a) => a.address),
              told.addresses,
            )
          ? `lease holds ${lease.addresses.map((a) => a.address).join()}, the runtime was told ${told.addresses.join()}`
          : told.mode === 'ptp' && !told.rerunning && eth0 !== undefined && !sameSet(eth0, told.addresses)
            ? `eth0 in ${told.netns} carries ${eth0.join() || 'nothing'}`
            : undefined;
    if (problem)
      findings.push({
        invariant: 'lost',
        subject: told.podUid,
        detail: `pod ${told.podName} (${told.podUid}) on ${told.node}: ${problem}`,
        workflows: [leaseOf(told.podUid)],
      });
  }
  return findings;
}

async function ptpInterfaces(leases: LeaseView[]): Promise<Finding[]> {
  const findings: Finding[] = [];
  for (const lease of leases) {
    if (lease.start.mode !== 'ptp' || !['Active', 'Running'].includes(lease.phase)) continue;
    for (const attachment of lease.attachments.filter((a) => a.status === 'active')) {
      if (!existsSync(attachment.netns)) continue; // the sandbox is gone: the leak rule's business
      const links = await addressesIn(attachment.netns.replace('/var/run/netns/', ''));
      const carried = links?.get(attachment.ifName) ?? [];
      if (
        !sameSet(
          carried,
          lease.addresses.map((a) => a.address),
        )
      )
        findings.push({
          invariant: 'ptp-interface',
          subject: `${lease.workflowId}/${attachment.containerId}`,
          detail: `${lease.workflowId} is ${lease.phase} but ${attachment.ifName} in ${attachment.netns} carries ${carried.join() || 'nothing'}`,
          workflows: [lease.workflowId],
        });
    }
  }
  return findings;
}

function leaked(leases: LeaseView[], pods: Set<string>): Finding[] {
  return leases
    .filter((l) => holding(l) && !pods.has(l.start.podUid))
    .map((l) => ({
      invariant: 'leaked' as const,
      subject: l.workflowId,
      detail: `${l.workflowId} (${l.phase}) holds ${l.addresses.map((a) => a.address).join()} for pod ${l.start.podUid}, which does not exist`,
      workflows: [l.workflowId],
    }));
}

/**
 * A run the reconciler ended because its task failed on every attempt with the SDK's update
 * machine (the class counted apart in the replays, ./histories): the remedy the reconciler is for,
 * not a failure of netlease's. Its reason says which (activities/wedged-leases).
 */
async function endedForTheSdk(client: Client, run: { workflowId: string; runId: string }): Promise<boolean> {
  const history = await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
  const reason = history.events?.at(-1)?.workflowExecutionTerminatedEventAttributes?.reason ?? '';
  return reason.startsWith('netlease reconciler:') && SDK_UPDATE_ORDER.test(reason);
}

/** Closed otherwise than by completing or continuing; runs an operator closed on purpose are not counted. */
async function failedWorkflows(
  client: Client,
  taskQueue: string,
  closedByOperator: ReadonlyMap<string, number>,
): Promise<Finding[]> {
  const query = `TaskQueue = '${taskQueue}' AND ExecutionStatus IN ('Failed', 'Terminated', 'TimedOut', 'Canceled')`;
  const findings: Finding[] = [];
  for await (const execution of client.workflow.list({ query })) {
    const since = closedByOperator.get(execution.workflowId);
    const closed = execution.closeTime?.getTime() ?? 0;
    if (execution.status.name === 'TERMINATED' && since !== undefined && closed >= since - 2000) continue;
    if (execution.status.name === 'TERMINATED' && (await endedForTheSdk(client, execution))) continue;
    findings.push({
      invariant: 'workflow-failed',
      subject: `${execution.workflowId}@${execution.runId}`,
      detail: `${execution.workflowId} ${execution.status.name}`,
      workflows: [execution.workflowId],
    });
  }
  return findings;
}
