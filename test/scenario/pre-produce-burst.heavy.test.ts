// 110 pods bound to one node at once, as a node that just joined gets them: the agent
// pre-produces and offers every lease, then 110 ADDs arrive 16 at a time through the real shim.
// Every ADD is answered from its offer, every answer is confirmed (the leases go Active), and no
// address is handed to two pods.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OfferBook } from '../../worker/agent/offers';
import type { PreProducer } from '../../worker/agent/pre-produce';
import { netconf } from '../harness/netconf';
import { offersOnDisk, openTestOffers, preProduceOn } from '../harness/offers';
import { runNodeAgent, type RunningNodeAgent } from '../harness/node-agent';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { inBatches, runShim } from '../harness/shim';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const PODS = 110;
const node = uniqueName('burst-node');
const offerDir = mkdtempSync(join(tmpdir(), 'netlease-offers-'));
let scenario: Scenario;
let offers: OfferBook;
let agent: RunningNodeAgent;
let producer: PreProducer;

beforeAll(async () => {
  scenario = await Scenario.create('pre-produce-burst');
  await scenario.cluster.createNode(node);
  offers = await openTestOffers(scenario.temporal.client, { dir: offerDir });
  scenario.context.offers = offers;
  agent = await runNodeAgent(node, undefined, {}, offers);
  producer = preProduceOn(scenario, node, offers);
});
afterAll(async () => {
  producer?.stop();
  offers?.close();
  await agent?.stop();
  await scenario?.close();
});

const countOnNode = async (phase: string) =>
  (
    await scenario.temporal.client.workflow.count(
      `WorkflowType = 'leaseWorkflow' AND NodeName = '${node}' AND LeasePhase = '${phase}'`,
    )
  ).count;

test(`${PODS} pods bound at once: every first ADD answered from its offer, confirmed, no address twice`, async () => {
  const names = Array.from({ length: PODS }, (_, i) => `burst-${i}`);
  const uids = await inBatches(
    names.map((name) => () => scenario.cluster.createPod(name, node)),
    16,
  );
  const onDisk = () => offersOnDisk(offerDir);
  expect(await waitForValue(onDisk, (n) => n === PODS, 120_000, 250)).toBe(PODS);

  const adds = await inBatches(
    names.map(
      (name, i) => () =>
        runShim({
          command: 'ADD',
          containerId: `ctr-${uids[i]}`,
          netns: `/var/run/netns/${name}`,
          ifName: 'eth0',
          args: {
            K8S_POD_NAMESPACE: scenario.cluster.namespace,
            K8S_POD_NAME: name,
            K8S_POD_UID: uids[i] ?? '',
          },
          stdin: netconf({ taskQueue: scenario.temporal.taskQueue, nodeName: node }),
        }),
    ),
    16,
  );
  expect(adds.map((a) => a.exitCode)).toEqual(names.map(() => 0));
  const v4 = adds.map((a) => ((a.json?.ips ?? []) as Array<{ address: string }>)[0]?.address);
  expect(new Set(v4).size).toBe(PODS);
  // Confirmed: every lease Active, and no offer left on disk (each was spent by its answer).
  expect(
    await waitForValue(
      () => countOnNode('Active'),
      (n) => n === PODS,
      120_000,
      500,
    ),
  ).toBe(PODS);
  expect(await waitForValue(onDisk, (n) => n === 0, 30_000, 250)).toBe(0);
  const owners = Object.values((await scenario.table(node))?.allocations ?? {}).map((a) => a.owner);
  expect(owners).toHaveLength(2 * PODS); // one address per family per pod, each owned once
  expect(new Set(owners).size).toBe(PODS);
}, 300_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, PODS);
});
