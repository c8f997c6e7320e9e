// A NetleasePool's spec and status (domain/pool-object): a spec PoolSpecSchema refuses names its
// `spec.` field; the conditions say Ready by how the spec stands, NearlyExhausted at 80 % and
// Exhausted at 95 % of a family, and keep their transition time while their status stays. The spec
// the pool serves is the object's only where Ready says this generation was applied.
import type { FamilyUse } from '../../domain/pool-use';
import {
  appliedSpecOf,
  PoolObjectSchema,
  poolObjectStatus,
  poolSpecOf,
  useCrossings,
  type PoolObject,
} from '../../domain/pool-object';

const object = (spec: unknown, status?: unknown): PoolObject =>
  PoolObjectSchema.parse({ metadata: { name: 'pods', generation: 4 }, spec, status });

test('the spec is a PoolSpec named by the object; what the API server let through is refused naming the field', () => {
  expect(poolSpecOf(object({ cidrs: ['198.18.0.0/24'] }))).toEqual({
    spec: {
      name: 'pods',
      cidrs: ['198.18.0.0/24'],
      blockSize: { ipv4: 26, ipv6: 120 },
      exclude: [],
      gateway: 'first',
    },
  });
  expect(poolSpecOf(object({ cidrs: ['198.18.0.0/24'], exclude: ['198.18.0.1/24'] }))).toEqual({
    invalid: expect.stringMatching(/^spec\.exclude\[0\]: invalid CIDR "198\.18\.0\.1\/24": host bits set/),
  });
  expect(poolSpecOf(object({ cidrs: ['198.18.0.0/24'], selector: {} }))).toEqual({
    invalid: expect.stringMatching(/^spec: .*selector/),
  });
});

const use = (allocated: number, capacity = 100): FamilyUse[] => [
  { family: 4, capacity, allocated, reserved: 0, cooldown: 0, leaked: 0 },
];
const NOW = new Date('2026-01-01T00:00:00.123Z');

test.each([
  [79, 'False', 'False'],
  [80, 'True', 'False'],
  [94, 'True', 'False'],
  [95, 'True', 'True'],
])('%s of 100 in use: NearlyExhausted %s, Exhausted %s', (allocated, nearly, exhausted) => {
  const status = poolObjectStatus(object({}), { state: 'applied' }, use(allocated), NOW);
  const of = (type: string) => status.conditions.find((c) => c.type === type);
  expect([of('NearlyExhausted')?.status, of('Exhausted')?.status]).toEqual([nearly, exhausted]);
  expect(of('NearlyExhausted')?.message).toContain(`ipv4: ${allocated} of 100 in use (${allocated} %)`);
  expect(status).toMatchObject({
    observedGeneration: 4,
    sampledAt: '2026-01-01T00:00:00Z',
    ipv4: { capacity: 100, allocated, usage: `${allocated}/100` },
  });
});

test('Ready says how the spec stands; a condition keeps its transition time while its status stays', () => {
  const before = poolObjectStatus(object({}), { state: 'applied' }, use(1), new Date('2025-12-01T00:00:00Z'));
  const refused = { state: 'refused' as const, message: 'pool pods: gateway changed' };
  const after = poolObjectStatus(object({}, before), refused, use(1), NOW);
  expect(after.conditions).toEqual([
    {
      type: 'Ready',
      status: 'False',
      reason: 'ChangeRefused',
      message: 'pool pods: gateway changed',
      lastTransitionTime: '2026-01-01T00:00:00Z',
      observedGeneration: 4,
    },
    expect.objectContaining({
      type: 'NearlyExhausted',
      status: 'False',
      lastTransitionTime: '2025-12-01T00:00:00Z',
    }),
    expect.objectContaining({
      type: 'Exhausted',
      status: 'False',
      lastTransitionTime: '2025-12-01T00:00:00Z',
    }),
  ]);
  // The use not read (Temporal away): no counts, and the use conditions Unknown.
  const unread = poolObjectStatus(
    object({}),
    { state: 'pending', message: 'not applied yet' },
    undefined,
    NOW,
  );
  expect(unread).not.toHaveProperty('ipv4');
  expect(unread.conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
    ['Ready', 'False', 'Pending'],
    ['NearlyExhausted', 'Unknown', 'UseUnknown'],
    ['Exhausted', 'Unknown', 'UseUnknown'],
  ]);
});

test('a use condition turning True is a crossing, once: True again, or False, is none', () => {
  const c = (type: string, status: 'True' | 'False' | 'Unknown') =>
    ({ type, status, reason: 'r', message: `${type} m`, lastTransitionTime: 't' }) as const;
  const below = [c('Ready', 'True'), c('NearlyExhausted', 'False'), c('Exhausted', 'False')];
  const nearly = [c('Ready', 'True'), c('NearlyExhausted', 'True'), c('Exhausted', 'False')];
  const full = [c('Ready', 'True'), c('NearlyExhausted', 'True'), c('Exhausted', 'True')];
  expect(useCrossings(below, nearly)).toEqual([
    { reason: 'PoolNearlyExhausted', message: 'NearlyExhausted: NearlyExhausted m' },
  ]);
  expect(useCrossings(nearly, nearly)).toEqual([]);
  expect(useCrossings(nearly, full).map((x) => x.reason)).toEqual(['PoolExhausted']);
  expect(useCrossings([], full).map((x) => x.reason)).toEqual(['PoolNearlyExhausted', 'PoolExhausted']);
  expect(useCrossings(full, below)).toEqual([]);
  expect(useCrossings(below, [c('Ready', 'False'), ...below.slice(1)])).toEqual([]);
});

test("the applied spec is the object's only where Ready says this generation was applied", () => {
  const spec = { cidrs: ['198.18.0.0/24'], nodeSelector: { matchLabels: { region: 'eu' } } };
  const statusOf = (applied: Parameters<typeof poolObjectStatus>[1], generation = 4) =>
    poolObjectStatus(object(spec), applied, undefined, NOW).conditions.map((c) => ({
      ...c,
      observedGeneration: generation,
    }));
  const withStatus = (conditions: unknown) => object(spec, { conditions });
  expect(appliedSpecOf(withStatus(statusOf({ state: 'applied' })))).toMatchObject({
    name: 'pods',
    nodeSelector: { matchLabels: { region: 'eu' } },
  });
  // Refused: the workflow serves its older spec, which the object does not hold.
  expect(appliedSpecOf(withStatus(statusOf({ state: 'refused', message: 'no' })))).toBeUndefined();
  expect(appliedSpecOf(withStatus(statusOf({ state: 'pending', message: 'not yet' })))).toBeUndefined();
  // Ready about generation 3: the control worker has not applied generation 4 yet.
  expect(appliedSpecOf(withStatus(statusOf({ state: 'applied' }, 3)))).toBeUndefined();
  expect(appliedSpecOf(object(spec))).toBeUndefined();
});
