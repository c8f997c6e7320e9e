// The node agent's DEL queue: an entry the kernel cannot read right now (EIO) is kept and applied
// once it reads, never dropped; a DEL that must wait (its Temporal does not answer) does not hold
// back the DELs behind it; and with Temporal away a round ends after a few such answers instead of
// spending the call's timeout on every entry; a DEL its writer left half-written is removed once
// stale. Real files, the agent's real CNI API and drain,
// real leases on the test's Temporal.
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { leaseWorkflowId } from '../../domain/ids';
import { createLog } from '../../observability/log';
import { writeDurably } from '../../storage/durable-files';
import { freePort } from '../../tools/processes';
import { leaseStateQuery } from '../../workflows/lease-messages';
import { serveCniApi, type CniApi } from '../../worker/agent/cni-api';
import {
  enqueueDelete,
  LATER_IN_A_ROW_ENDS_ROUND,
  STALE_TEMPORARY_MS,
  type QueuedCall,
} from '../../worker/agent/delete-queue';
import { netconf } from '../harness/netconf';
import { expectReplayed } from '../harness/replay';
import { cniArgs, runShim } from '../harness/shim';
import { uniqueName, withControlWorker } from '../harness/temporal';

const node = uniqueName('node');
const ctx = withControlWorker('delete-queue');
/** The call timeout of DELs whose Temporal does not answer: each costs this much. */
const DEAD_TIMEOUT_S = 2;

/** A DEL of the pod's eth0 as the shim queues it; `temporal`: another Temporal address. */
function del(uid: string, temporal?: string): QueuedCall {
  const conf = netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node });
  const stdin = temporal
    ? {
        ...conf,
        temporal: { ...(conf.temporal as object), address: temporal },
        timeoutSeconds: DEAD_TIMEOUT_S,
      }
    : conf;
  return {
    env: {
      CNI_COMMAND: 'DEL',
      CNI_CONTAINERID: `ctr-${uid}`,
      CNI_NETNS: `/var/run/netns/${uid}`,
      CNI_IFNAME: 'eth0',
      CNI_ARGS: cniArgs({ K8S_POD_NAMESPACE: 'queue', K8S_POD_NAME: uid.slice(0, 8), K8S_POD_UID: uid }),
      CNI_PATH: '/opt/cni/bin',
    },
    stdin: JSON.stringify(stdin),
  };
}

/** A pod with an attachment in its lease (ipam ADD through the shim and the file's agent API). */
async function addedPod(): Promise<string> {
  const uid = randomUUID();
  const outcome = await runShim({
    command: 'ADD',
    containerId: `ctr-${uid}`,
    netns: `/var/run/netns/${uid}`,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: 'queue', K8S_POD_NAME: uid.slice(0, 8), K8S_POD_UID: uid },
    stdin: netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node }),
  });
  expect(outcome.exitCode).toBe(0);
  return uid;
}

const attachmentsOf = async (uid: string) =>
  (await ctx.temporal.client.workflow.getHandle(leaseWorkflowId(uid, 'eth0')).query(leaseStateQuery))
    .attachments;

/** A queue directory of its own and an agent API that drains it only when asked. */
async function queueWithApi(): Promise<{ queue: string; api: CniApi; lines: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'netlease-queue-'));
  const queue = join(dir, 'del-queue');
  mkdirSync(queue);
  const lines: string[] = [];
  const log = createLog('test', 'info', { write: (line: string) => void lines.push(line) });
  const api = await serveCniApi({
    socket: join(dir, 'agent.sock'),
    deleteQueue: queue,
    log,
    drainEveryMs: 3_600_000,
  });
  return { queue, api, lines };
}

const queued = (queue: string) => readdirSync(queue).filter((n) => n.endsWith('.json'));
/** The address of a Temporal that does not answer: nothing listens there. */
const nobody = async () => `127.0.0.1:${await freePort()}`;

test('a queued DEL the kernel cannot read now (EIO) is kept, the rest applied, and it is applied once it reads', async () => {
  const [first, second] = [await addedPod(), await addedPod()];
  const { queue, api, lines } = await queueWithApi();
  try {
    // First in the queue's order: a file whose every read fails with EIO (page 0 of /proc/self/mem).
    const failing = '00000000000000000000-eio.json';
    symlinkSync('/proc/self/mem', join(queue, failing));
    await enqueueDelete(queue, del(second));
    await api.drain();
    expect(queued(queue)).toEqual([failing]); // kept, not dropped
    expect(await attachmentsOf(second)).toEqual([]); // the DEL behind it applied
    expect(await attachmentsOf(first)).toHaveLength(1);
    expect(lines.some((l) => l.includes(failing) && l.includes('EIO') && l.includes('kept'))).toBe(true);
    expect(lines.some((l) => l.includes('dropped'))).toBe(false);

    // The fault passes (here: the same entry now reads as the DEL it holds).
    await writeDurably(queue, failing, JSON.stringify(del(first)));
    await api.drain();
    expect(queued(queue)).toEqual([]);
    expect(await attachmentsOf(first)).toEqual([]);
  } finally {
    await api.close();
  }
});

test('a DEL whose Temporal does not answer is kept and does not hold back the DELs behind it', async () => {
  const uid = await addedPod();
  const { queue, api } = await queueWithApi();
  try {
    await enqueueDelete(queue, del(randomUUID(), await nobody())); // first: answers "later"
    await enqueueDelete(queue, del(uid));
    await api.drain();
    expect(await attachmentsOf(uid)).toEqual([]);
    expect(queued(queue)).toHaveLength(1); // the waiting one, for the next round
  } finally {
    await api.close();
  }
});

test('with Temporal away a round ends after a few "later" answers; the next round reaches the DELs behind them', async () => {
  const uid = await addedPod();
  const { queue, api } = await queueWithApi();
  const away = await nobody();
  const waiting = LATER_IN_A_ROW_ENDS_ROUND + 1;
  try {
    for (let i = 0; i < waiting; i++) await enqueueDelete(queue, del(randomUUID(), away));
    await enqueueDelete(queue, del(uid));
    const started = Date.now();
    await api.drain();
    const seconds = (Date.now() - started) / 1000;
    // Ended after LATER_IN_A_ROW_ENDS_ROUND timeouts, not one per entry: the rest were not reached.
    expect(seconds).toBeLessThan(waiting * DEAD_TIMEOUT_S);
    expect(queued(queue)).toHaveLength(waiting + 1);
    expect(await attachmentsOf(uid)).toHaveLength(1);
    await api.drain(); // the ones that waited go last
    expect(await attachmentsOf(uid)).toEqual([]);
    expect(queued(queue)).toHaveLength(waiting);
  } finally {
    await api.close();
  }
});

test('a DEL left half-written (its writer died before the rename) is removed once stale; a young one is left to its writer', async () => {
  const uid = await addedPod();
  const { queue, api, lines } = await queueWithApi();
  try {
    // As the shim or the agent leaves one when it dies between writing and renaming.
    const stale = `.00000000000000000001-dead.json.tmp`;
    const young = `.00000000000000000002-writing.json.tmp`;
    writeFileSync(join(queue, stale), JSON.stringify(del(uid)).slice(0, 40));
    writeFileSync(join(queue, young), JSON.stringify(del(uid)).slice(0, 40));
    const before = new Date(Date.now() - STALE_TEMPORARY_MS - 1000);
    utimesSync(join(queue, stale), before, before);
    await enqueueDelete(queue, del(uid));
    await api.drain();
    expect(readdirSync(queue)).toEqual([young]);
    expect(await attachmentsOf(uid)).toEqual([]); // the complete one applied
    expect(lines.some((l) => l.includes(stale) && l.includes('half-written'))).toBe(true);
  } finally {
    await api.close();
  }
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(ctx.temporal, 4);
});
