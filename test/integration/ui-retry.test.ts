// The operator's console, used as a person uses it: the real Temporal Web UI (a dev server of this
// file's own, with its UI) in Debian's chromium through playwright-core. A ptp ADD through the real
// shim parks its lease (a foreign eth0 in the pod's netns, a 2-attempt budget); the operator
// filters `LeasePhase = "ActivationFailed"`, opens the lease, reads the cause on its page, removes
// the foreign link, sends `retry` from the Signal form and sees the lease Active.
// Screenshots of each step: test-artifacts/ui-retry/ (kept; the folder is git-ignored).
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { NetleaseConfigSchema } from '../../domain/config';
import { leaseWorkflowId } from '../../domain/ids';
import { ip } from '../../kernel/ip';
import { freePort } from '../../tools/processes';
import { startDevServer, type DevServer } from '../../tools/temporal-server';
import { silentLog } from '../../observability/log';
import { serveCniApi, type CniApi } from '../../worker/agent/cni-api';
import { consumeLease } from '../../cni/consume';
import { termsOf, type LeaseStart } from '../../domain/lease';
import { failingWorkflowTask } from '../../temporal/workflow-task';
import { leaseStateQuery, releaseSignal } from '../../workflows/lease-messages';
import { netconf } from '../harness/netconf';
import { deleteAllNetns, makeNetns, type TestNetns } from '../harness/netns';
import { runNodeAgent, type RunningNodeAgent } from '../harness/node-agent';
import { expectReplayed } from '../harness/replay';
import { runShim } from '../harness/shim';
import { runControlWorker, uniqueName, type RunningWorker } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const ARTIFACTS = join(__dirname, '..', '..', '..', 'test-artifacts', 'ui-retry');
const CHROMIUM = '/usr/bin/chromium';
// The machine's network is closed: no first-run, sync, update or QUIC connection attempts.
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const STEP_MS = 15_000;

const taskQueue = uniqueName('tq-ui');
const node = uniqueName('node');
const cniDir = mkdtempSync(join(tmpdir(), 'netlease-ui-'));
const cniSocket = join(cniDir, 'cni.sock');
const deleteQueue = join(cniDir, 'del-queue');

let server: DevServer | undefined;
let connection: Connection | undefined;
let client: Client | undefined;
let worker: RunningWorker | undefined;
let agent: RunningNodeAgent | undefined;
let cni: CniApi | undefined;
let browser: Browser | undefined;

const the = <T>(value: T | undefined, what: string): T => {
  if (value === undefined) throw new Error(`${what}: set up in beforeAll`);
  return value;
};

beforeAll(async () => {
  rmSync(ARTIFACTS, { recursive: true, force: true });
  mkdirSync(ARTIFACTS, { recursive: true });
  const port = await freePort();
  let uiPort = await freePort();
  for (let i = 0; i < 5 && uiPort === port; i++) uiPort = await freePort();
  server = await startDevServer({ port, uiPort });
  connection = await Connection.connect({ address: server.address });
  client = new Client({ connection });
  // Two attempts 0.2 s apart, then the lease parks.
  const config = NetleaseConfigSchema.parse({
    temporal: { address: server.address, taskQueue },
    pools: [{ name: taskQueue, cidrs: ['198.18.0.0/16', 'fd00:18::/64'] }],
    activation: {
      initialIntervalSeconds: 0.2,
      maximumIntervalSeconds: 0.2,
      maximumAttempts: 2,
      attemptTimeoutSeconds: 10,
    },
  });
  worker = await runControlWorker(config);
  const host = await makeNetns('host');
  agent = await runNodeAgent(node, host.name, { address: server.address });
  cni = await serveCniApi({ socket: cniSocket, deleteQueue, log: silentLog() });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await cni?.close();
  await agent?.stop();
  await worker?.stop();
  await connection?.close();
  await server?.stop();
  await deleteAllNetns();
  rmSync(cniDir, { recursive: true, force: true });
});

/** A screenshot and the accessibility tree of the page as it is now, kept as test artifacts. */
async function keep(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  writeFileSync(join(ARTIFACTS, `${name}.aria.yml`), await page.ariaSnapshot());
}

async function shown(locator: Locator, timeout = STEP_MS): Promise<Locator> {
  await locator.first().waitFor({ state: 'visible', timeout });
  return locator.first();
}

const isShown = (locator: Locator, timeout: number): Promise<boolean> =>
  locator
    .first()
    .waitFor({ state: 'visible', timeout })
    .then(
      () => true,
      () => false,
    );

/**
 * Text in the UI's markdown panels (Summary, Details, Current Details), each its own iframe:
 * waits until one of them shows `text`, reloading the page now and then (the UI does not poll
 * user metadata), until the deadline.
 */
async function markdownText(page: Page, text: RegExp, timeoutMs: number): Promise<Locator> {
  const deadline = Date.now() + timeoutMs;
  for (let round = 1; ; round++) {
    const frames = page.locator('iframe');
    await isShown(frames, 1000); // the panels render after the workflow is described
    const count = await frames.count();
    for (let i = 0; i < count; i++) {
      const found = frames.nth(i).contentFrame().getByText(text);
      if (await isShown(found, 500)) return found.first();
    }
    if (Date.now() >= deadline)
      throw new Error(`no markdown panel showed ${String(text)} within ${timeoutMs} ms`);
    if (round % 3 === 0) {
      await page.reload();
      await shown(page.getByRole('heading', { name: 'Current Details' }));
    }
  }
}

test('from the UI: filter the parked lease, read its cause, fix it, send retry, see it Active', async () => {
  const uid = randomUUID();
  const workflowId = leaseWorkflowId(uid, 'eth0');
  const pod = await makeNetns('pod');
  // An eth0 netlease did not make: every activation attempt fails on it, then the lease parks.
  await ip(pod.name, ['link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'foreign0']);
  const parked = await runShim({
    command: 'ADD',
    containerId: `ctr-${uid}`,
    netns: pod.path,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: 'ui', K8S_POD_NAME: `pod-${uid.slice(0, 8)}`, K8S_POD_UID: uid },
    stdin: netconf({
      taskQueue,
      nodeName: node,
      extra: {
        mode: 'ptp',
        temporal: { address: the(server, 'server').address, taskQueue },
        agentSocket: cniSocket,
        deleteQueue,
      },
    }),
  });
  expect(parked.json).toMatchObject({ code: 11, msg: expect.stringMatching(/activation failed/) });
  const handle = the(client, 'client').workflow.getHandle(workflowId);

  const page = await the(browser, 'browser').newPage({ viewport: { width: 1440, height: 1000 } });
  page.setDefaultTimeout(STEP_MS);
  try {
    await operatorRetries(page, workflowId, pod);
  } catch (err) {
    await keep(page, 'failed').catch(() => undefined); // what the page showed when it failed
    throw err;
  } finally {
    await page.close();
  }
  const state = await waitForValue(
    () => handle.query(leaseStateQuery),
    (s) => s.phase === 'Active',
    10_000,
  );
  expect(state.phase).toBe('Active');
  expect(state.attachments.map((a) => a.status)).toEqual(['active']);
  expect((await pod.links()).find((l) => l.ifname === 'eth0')).toBeDefined();
});

/** What the operator does in the UI, one screenshot per step. */
async function operatorRetries(page: Page, workflowId: string, pod: TestNetns): Promise<void> {
  const ui = the(the(server, 'server').uiUrl, 'UI');

  // 1. The workflows list, filtered by the lease phase in the query box.
  await page.goto(`${ui}/namespaces/default/workflows`);
  await shown(page.getByRole('button', { name: 'Add Filter' }));
  await page.getByTestId('toggle-manual-query').click();
  const query = await shown(page.getByRole('search').getByRole('searchbox'));
  await query.fill('LeasePhase = "ActivationFailed"');
  await query.press('Enter');
  const row = page.getByRole('link', { name: workflowId, exact: true });
  for (let round = 0; !(await isShown(row, 2000)); round++) {
    if (round >= 10) throw new Error(`${workflowId} not listed for LeasePhase = "ActivationFailed"`);
    await page.reload(); // visibility is eventually consistent; the query stays in the URL
  }
  await shown(page.getByRole('heading', { name: /^1 Workflow/ }));
  expect(await page.getByRole('link', { name: /^(node|pool)\// }).count()).toBe(0);
  await keep(page, '01-list-filtered');

  // 2. The lease's page: its timeline names what each step did (activity summaries).
  await row.click();
  await shown(page.getByRole('heading', { name: workflowId }));
  await shown(page.getByText(/produceAddresses • produce: reserve addresses from pool/));
  await shown(page.getByText(/activateAttachment • activate: eth0 with 198\.18\./));
  await keep(page, '02-lease-history');

  // 3. Summary, details and current details, side by side: the cause and the remedy come first.
  await page.getByRole('tab', { name: 'User Metadata' }).click();
  await shown(page.getByRole('heading', { name: 'Current Details' }));
  await markdownText(page, /^ui\/pod-\S+ eth0 on node-/, STEP_MS);
  await markdownText(page, /Pod ui\/pod-.* · UID /, STEP_MS);
  const cause = await markdownText(
    page,
    /^ActivationFailed: eth0 in \S+ exists and is not netlease.s \(MAC [0-9a-f:]+\)\. Remedy: fix that, then send the retry signal/,
    STEP_MS,
  );
  await shown(page.getByText(/activate: eth0 with .* in \/var\/run\/netns\//));
  await keep(page, '03-lease-cause');
  expect(await cause.innerText()).toContain(pod.path);

  // 4. The operator removes the foreign link and sends `retry` from the Signal form.
  await ip(pod.name, ['link', 'del', 'eth0']);
  await page.getByRole('button', { name: 'More Actions' }).click();
  await page.getByRole('menuitem', { name: 'Send a Signal' }).click();
  const form = await shown(page.getByRole('dialog', { name: 'Send a Signal' }));
  await form.getByRole('button', { name: 'Select a signal' }).click();
  // Each signal is offered with its description (workflows/lease.ts setHandler options).
  await form
    .getByRole('option', { name: /^retry Run a parked \(ActivationFailed\) activation again/ })
    .click();
  await shown(form.getByRole('button', { name: 'retry' }));
  await keep(page, '04-signal-form');
  await form.getByRole('button', { name: 'Submit' }).click();
  await form.waitFor({ state: 'hidden', timeout: STEP_MS });

  // 5. The page shows the lease Active (reloaded until it does), and so does its state.
  const active = await markdownText(page, /^Active: interface ready/, 30_000);
  await keep(page, '05-lease-active');
  expect(await active.isVisible()).toBe(true);
}

test('from the UI: release with Data {} is ignored with a note, the lease not wedged; a proper release ends it', async () => {
  const uid = randomUUID();
  const workflowId = leaseWorkflowId(uid, 'eth0');
  const start: LeaseStart = {
    podUid: uid,
    podNamespace: 'ui',
    podName: `pod-${uid.slice(0, 8)}`,
    ifName: 'eth0',
    nodeName: node,
    pool: taskQueue,
    mode: 'ipam',
  };
  const temporal = the(client, 'client');
  await consumeLease(temporal, taskQueue, start, {
    containerId: `ctr-${uid}`,
    netns: '/var/run/netns/x',
    ifName: 'eth0',
    terms: termsOf(start),
  });
  const page = await the(browser, 'browser').newPage({ viewport: { width: 1440, height: 1000 } });
  page.setDefaultTimeout(STEP_MS);
  try {
    await operatorSendsEmptyRelease(page, workflowId);
  } catch (err) {
    await keep(page, 'failed').catch(() => undefined);
    throw err;
  } finally {
    await page.close();
  }
  // The signal was processed (the note above) and no workflow task failed: the lease still moves.
  const handle = temporal.workflow.getHandle(workflowId);
  expect(await failingWorkflowTask(temporal, workflowId)).toBeUndefined();
  const events = (await handle.fetchHistory()).events ?? [];
  expect(events.filter((e) => e.workflowExecutionSignaledEventAttributes)).toHaveLength(1);
  expect(events.filter((e) => e.workflowTaskFailedEventAttributes)).toHaveLength(0);
  expect((await handle.query(leaseStateQuery)).phase).toBe('Active');
  await handle.signal(releaseSignal, { reason: 'ui test' });
  const state = await handle.result();
  expect(state).toMatchObject({ phase: 'Released', releaseReason: 'ui test' });
});

/** The operator opens the lease, sends `release` with Data `{}` and reads why nothing happened. */
async function operatorSendsEmptyRelease(page: Page, workflowId: string): Promise<void> {
  const ui = the(the(server, 'server').uiUrl, 'UI');
  await page.goto(`${ui}/namespaces/default/workflows/${encodeURIComponent(workflowId)}`);
  await shown(page.getByRole('heading', { name: workflowId }));
  await page.getByRole('button', { name: 'More Actions' }).click();
  await page.getByRole('menuitem', { name: 'Send a Signal' }).click();
  const form = await shown(page.getByRole('dialog', { name: 'Send a Signal' }));
  await form.getByRole('button', { name: 'Select a signal' }).click();
  await form.getByRole('option', { name: /^release Release the lease/ }).click();
  const data = await shown(form.locator('.cm-content'));
  await data.click();
  await page.keyboard.press('ControlOrMeta+a');
  await page.keyboard.type('{}');
  await keep(page, '06-release-empty-form');
  expect((await data.innerText()).replace(/\s/g, '')).toBe('{}');
  await form.getByRole('button', { name: 'Submit' }).click();
  await form.waitFor({ state: 'hidden', timeout: STEP_MS });
  await page.getByRole('tab', { name: 'User Metadata' }).click();
  await shown(page.getByRole('heading', { name: 'Current Details' }));
  await markdownText(
    page,
    /ignored a release signal \(reason: .*send \{"reason":"<why>"\} to release the lease/,
    30_000,
  );
  await keep(page, '07-release-ignored');
}

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed({ client: the(client, 'client'), taskQueue }, 4);
});
