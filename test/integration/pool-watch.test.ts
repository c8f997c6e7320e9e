// Pool selection's served pools from NetleasePool objects (kubernetes.poolObjects on the node
// agent, kubernetes/pool-selectors), on the real kube-apiserver and Temporal: a nodeSelector
// changed on the object is what the next ADD's selection uses, once the control worker applied it
// (not up to 30 s later, as the pool catalogue kept it), and the ADD path asks Temporal nothing (no
// visibility list, no `spec` query; counted on a client wrapping the scenario's connection). Where
// the API serves no NetleasePools (a 404), the catalogue is read as before.
import { Client, type WorkflowClientInterceptor } from '@temporalio/client';
import { chosenTerms } from '../../cni/pool-choice';
import { poolWorkflowId } from '../../domain/ids';
import { POOL_GROUP, POOL_PLURAL, POOL_VERSION, type PoolObject } from '../../domain/pool-object';
import { connectKube } from '../../kubernetes/kube';
import { ServedPoolObjects } from '../../kubernetes/pool-selectors';
import { SelectionFacts } from '../../kubernetes/selection-facts';
import { kubeconfigPath } from '../harness/kube';
import { installPoolCrd, poolObjects, type PoolObjectsApi } from '../harness/pool-objects';
import { expectReplayed } from '../harness/replay';
import { Scenario } from '../harness/scenario';
import { uniqueName } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const POOL = uniqueName('watched');
const NODE = uniqueName('node-eu');
const SELECTOR = (region: string) => ({ nodeSelector: { matchLabels: { region } } });

let scenario: Scenario;
let pools: PoolObjectsApi;
let pod: { podNamespace: string; podName: string; podUid: string; nodeName: string };
const stops: Array<() => void> = [];
const errors: unknown[] = [];

beforeAll(async () => {
  await installPoolCrd(await connectKube(kubeconfigPath())); // before the worker's watch opens
  scenario = await Scenario.create('poolwatch', { poolObjects: true });
  pools = poolObjects(scenario.cluster.clients);
  await pools.create(POOL, { cidrs: ['10.204.0.0/16'], ...SELECTOR('eu') });
  await appliedGeneration();
  await scenario.cluster.createNode(NODE, { labels: { region: 'eu' } });
  // The namespace names only this pool: other files' objects on the shared API server never matter.
  await scenario.cluster.markNamespace({ annotations: { 'netlease.io/pools': POOL } });
  const podUid = await scenario.cluster.createPod('web-0', NODE);
  pod = { podNamespace: scenario.cluster.namespace, podName: 'web-0', podUid, nodeName: NODE };
}, 60_000);
afterAll(async () => {
  for (const stop of stops) stop();
  await pools?.delete(POOL);
  await scenario?.close();
});

/** The object once the control worker says its pool serves its current generation. */
const appliedGeneration = (): Promise<PoolObject> =>
  waitForValue(
    () => pools.read(POOL),
    (o) =>
      o.status?.conditions.some(
        (c) => c.type === 'Ready' && c.status === 'True' && c.observedGeneration === o.metadata.generation,
      ) ?? false,
    30_000,
  );

/** A client on the scenario's connection counting its visibility lists and its queries to the pool. */
function countingClient() {
  const counts = { lists: 0, poolQueries: 0 };
  const interceptor: WorkflowClientInterceptor = {
    query: (input, next) => {
      if (input.workflowExecution.workflowId === poolWorkflowId(POOL)) counts.poolQueries++;
      return next(input);
    },
  };
  const client = new Client({
    connection: scenario.temporal.client.connection,
    interceptors: { workflow: [interceptor] },
  });
  const list = client.workflow.list.bind(client.workflow);
  client.workflow.list = (options) => (counts.lists++, list(options));
  return { client, counts };
}

/** The pool the pod's ADD selects, or the refusal's reason code. */
const choose = (client: Client, facts: SelectionFacts | ServedFacts) =>
  chosenTerms(client, scenario.temporal.taskQueue, facts, pod, undefined).then(
    (terms) => terms.pool,

    (err: { reason?: string }) => `refused: ${err.reason ?? String(err)}`,
  );

type ServedFacts = Pick<SelectionFacts, 'forPod' | 'servedPools'>;

test('the API serves no NetleasePools (404): selection reads the pool catalogue, as before', async () => {
  const facts = new SelectionFacts(scenario.cluster.clients, NODE).start((err) => errors.push(err));
  const absent = { group: POOL_GROUP, version: POOL_VERSION, plural: `${POOL_PLURAL}absent` };
  let told = false;
  const objects = new ServedPoolObjects(scenario.cluster.clients, absent).start(
    (err) => errors.push(err),
    () => (told = true),
  );
  stops.push(
    () => facts.stop(),
    () => objects.stop(),
  );
  await waitForValue(() => Promise.resolve(told), Boolean, 10_000);
  expect(objects.served()).toBeUndefined();
  const { client, counts } = countingClient();
  const asked = { forPod: facts.forPod.bind(facts), servedPools: () => objects.served() };
  expect(await choose(client, asked)).toBe(POOL);
  expect(counts.lists).toBeGreaterThan(0);
  expect(counts.poolQueries).toBeGreaterThan(0);
});

test('with objects: the next ADD uses a changed nodeSelector at once, and asks Temporal nothing', async () => {
  const facts = new SelectionFacts(scenario.cluster.clients, NODE).start((err) => errors.push(err), {
    poolObjects: true,
  });
  stops.push(() => facts.stop());
  const { client, counts } = countingClient();
  // The watch has the pool: no list, no query from here on.
  await waitForValue(
    () => Promise.resolve(facts.servedPools()?.pools.map((p) => p.name)),
    (names) => names?.includes(POOL) ?? false,
    10_000,
  );
  expect(await choose(client, facts)).toBe(POOL);
  await pools.patchSpec(POOL, SELECTOR('us'));
  await appliedGeneration();
  // Within 5 s of the change applied (the catalogue kept the old selector 30 s).
  const refused = await waitForValue(
    () => choose(client, facts),
    (c) => c !== POOL,
    5_000,
  );
  expect(refused).toBe('refused: no-pool-for-pod');
  await pools.patchSpec(POOL, SELECTOR('eu'));
  await appliedGeneration();
  expect(
    await waitForValue(
      () => choose(client, facts),
      (c) => c === POOL,
      5_000,
    ),
  ).toBe(POOL);
  expect(counts).toEqual({ lists: 0, poolQueries: 0 });
  expect(errors).toEqual([]);
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(scenario.temporal, 2);
});
