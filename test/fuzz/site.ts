// Where the fuzzer calls: a control worker on the file's task queue (Scenario: real Temporal and
// kube-apiserver), a Node, the real node agent process with its host side in a namespace of its
// own, pre-producing for two bound pods (so ADDs meet offers on its disk), and a pristine pod
// namespace, replaced whenever an accepted call put something in it.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { freePort, isAlive, waitFor } from '../../tools/processes';
import { kubeconfigPath } from '../harness/kube';
import { netconf } from '../harness/netconf';
import { deleteAllNetns, deleteNetns, makeNetns } from '../harness/netns';
import { startNodeAgentProcess, type NodeAgentProcess } from '../harness/node-agent';
import { offersOnDisk } from '../harness/offers';
import { Scenario } from '../harness/scenario';
import { runShim, type ShimOutcome } from '../harness/shim';
import { temporalAddress, uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';
import type { FuzzTerms } from './input';
import { filesIn, leaseMark, linksIn, possibleWorkflowId, type Snapshot } from './state';
import type { Where } from './targets';

const OFFERED_PODS = 2;
const SETTLE_MS = 20_000;

export interface FuzzSite {
  scenario: Scenario;
  /** The agent's files and logs. */
  dir: string;
  terms: FuzzTerms;
  where(): Where;
  agent(): NodeAgentProcess;
  /** The agent's open file descriptors (sockets included): what a leak of connections shows in. */
  agentFds(): number;
  /** The agent's files, the namespaces' links and, with an id, that lease. */
  snapshot(leaseId: string | undefined): Promise<Snapshot>;
  leaseMark(leaseId: string): Promise<string>;
  /** Whether the agent holds an offer of this lease on disk (pre-produced, or a cold ADD's answer). */
  offerHeld(leaseId: string): Promise<boolean>;
  /** After a call that may have changed state: its lease and the agent's files quiet, the pod namespace pristine. */
  settle(leaseId: string | undefined): Promise<void>;
  /** Starts the agent again (after it died). */
  restartAgent(): Promise<void>;
  close(): Promise<void>;
}

/** No workflow task or activity pending: what the call set going has run its course. */
async function leaseSettled(scenario: Scenario, leaseId: string): Promise<void> {
  if (!possibleWorkflowId(leaseId)) return;
  const { client } = scenario.temporal;
  const quiet = async () => {
    try {
      const handle = client.workflow.getHandle(leaseId);
      const { raw } = await client.connection.withDeadline(Date.now() + 10_000, () => handle.describe());
      return !raw.pendingWorkflowTask && !raw.pendingActivities?.length;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return true;
      throw err;
    }
  };
  await waitForValue(quiet, (q) => q, SETTLE_MS, 50, `lease ${leaseId} settled`);
}

/** No offer answered but not yet confirmed, no DEL waiting in the queue. */
async function agentFilesSettled(offerDir: string, deleteQueue: string): Promise<void> {
  const busy = async () => {
    const queued = (await filesIn([deleteQueue])).length;
    const offers = await readdir(offerDir).catch(() => [] as string[]);
    const texts = await Promise.all(offers.map((n) => readFile(join(offerDir, n), 'utf8').catch(() => '')));
    return queued + texts.filter((t) => t.includes('"answered"')).length;
  };
  await waitForValue(busy, (n) => n === 0, SETTLE_MS, 50, 'offers confirmed and the DEL queue drained');
}

export async function openFuzzSite(prefix: string): Promise<FuzzSite> {
  const scenario = await Scenario.create(prefix, {
    reconcileIntervalSeconds: 86_400,
    // Parks at once; no Stalled timer changes a lease while the fuzzer watches it.
    activation: {
      initialIntervalSeconds: 0.1,
      maximumIntervalSeconds: 0.2,
      maximumAttempts: 2,
      stalledAfterSeconds: 86_400,
    },
  });
  const taskQueue = scenario.temporal.taskQueue;
  const node = uniqueName('fz-node');
  await scenario.cluster.createNode(node);
  const host = await makeNetns('fz-host');
  let pod = await makeNetns('fz-pod');
  const dir = mkdtempSync(join(tmpdir(), 'netlease-fuzz-'));
  const paths = { cniSocket: join(dir, 'cni.sock'), deleteQueue: join(dir, 'del-queue') };
  const offerDir = join(dir, 'offers');
  const startAgent = async () => {
    const started = startNodeAgentProcess(node, host.name, {}, { taskQueue }, paths, {
      offerDir,
      kubernetes: { kubeconfig: kubeconfigPath() },
      preProduce: { network: 'netlease-test', pool: taskQueue, mode: 'ipam' },
    });
    if (!(await waitFor(() => started.output().includes('"msg":"pre-producing leases"'), 30_000)))
      throw new Error(`node agent did not start: ${started.output().slice(-2000)}`);
    return started;
  };
  let agent = await startAgent();
  let agents = 0;
  /** Each agent's output, kept in the site's directory. */
  const keepLog = (ended: NodeAgentProcess) =>
    writeFileSync(join(dir, `agent-${agents++}.log`), ended.output());
  const offered = [];
  for (let i = 0; i < OFFERED_PODS; i++) {
    const name = `offered-${i}`;
    offered.push({ name, uid: await scenario.cluster.createPod(name, node) });
  }
  await waitForValue(
    () => offersOnDisk(offerDir),
    (n) => n === OFFERED_PODS,
    30_000,
    100,
    'offers on disk',
  );
  const terms: FuzzTerms = {
    taskQueue,
    node,
    pool: taskQueue,
    temporalAddress: temporalAddress(),
    agentSocket: paths.cniSocket,
    deleteQueue: paths.deleteQueue,
    podNamespace: scenario.cluster.namespace,
    offered,
    deadPort: await freePort(),
  };
  const pristine = async () => (await pod.links()).every((l) => l.ifname === 'lo');
  /**
   * A fresh pod namespace for the next calls. The kernel removes the old one's veth pairs after
   * `ip netns del` returns (its cleanup runs later): their host ends are waited for, so they do
   * not vanish under a later call's before-and-after.
   */
  const replacePod = async () => {
    const peers = (await pod.links()).flatMap((l) => (l.link_index === undefined ? [] : [l.link_index]));
    await deleteNetns(pod);
    pod = await makeNetns('fz-pod');
    const gone = (links: Array<{ ifindex: number }>) => !links.some((l) => peers.includes(l.ifindex));
    await waitForValue(() => host.links(), gone, SETTLE_MS, 20, "the old pod namespace's host ends gone");
  };
  return {
    scenario,
    dir,
    terms,
    where: () => ({ podNetns: pod.path, hostNetns: host.path }),
    agent: () => agent,
    agentFds: () => readdirSync(`/proc/${agent.pid}/fd`).length,
    async snapshot(leaseId) {
      const [files, hostLinks, podLinks, lease] = await Promise.all([
        filesIn([paths.deleteQueue, offerDir]),
        linksIn(host),
        linksIn(pod),
        leaseId ? leaseMark(scenario.temporal.client, leaseId) : undefined,
      ]);
      return { files, host: hostLinks, pod: podLinks, ...(lease ? { lease } : {}) };
    },
    leaseMark: (leaseId) => leaseMark(scenario.temporal.client, leaseId),
    async offerHeld(leaseId) {
      const texts = await Promise.all(
        (await readdir(offerDir).catch(() => [] as string[])).map((n) =>
          readFile(join(offerDir, n), 'utf8').catch(() => ''),
        ),
      );
      return texts.some((t) => t.includes(`"leaseId":${JSON.stringify(leaseId)}`));
    },
    async settle(leaseId) {
      if (leaseId) await leaseSettled(scenario, leaseId);
      await agentFilesSettled(offerDir, paths.deleteQueue);
      if (await pristine()) return;
      await replacePod();
    },
    async restartAgent() {
      if (isAlive(agent.pid)) await agent.stop();
      keepLog(agent);
      agent = await startAgent();
    },
    async close() {
      try {
        await agent.stop();
        keepLog(agent);
        await scenario.close();
      } finally {
        await deleteAllNetns();
      }
    },
  };
}

/** A good ADD and DEL of a fresh pod through the shim: what the agent must still answer after a fuzz. */
export async function goodCalls(site: FuzzSite): Promise<{ added: ShimOutcome; deleted: ShimOutcome }> {
  const { terms } = site;
  const uid = randomUUID();
  const stdin = {
    ...netconf({ taskQueue: terms.taskQueue, nodeName: terms.node }),
    agentSocket: terms.agentSocket,
    deleteQueue: terms.deleteQueue,
  };
  const call = {
    containerId: `ctr-${uid}`,
    netns: site.where().podNetns,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: terms.podNamespace, K8S_POD_NAME: 'after', K8S_POD_UID: uid },
    stdin,
  };
  const added = await runShim({ ...call, command: 'ADD' });
  return { added, deleted: await runShim({ ...call, command: 'DEL' }) };
}
