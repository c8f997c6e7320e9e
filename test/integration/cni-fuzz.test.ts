// A short fuzz pass of the CNI API (issue 18): generated calls (junk and missing variables,
// configurations changed field by field, stdin cut, nested, padded, not UTF-8) through the real
// shim executable to the real node agent process, and more straight to the agent's HTTP API.
// Each gets a CNI error with the spec's code naming the field, or a valid result, on time; a
// refused one changes nothing (the agent's files, the host and pod namespaces' links, the lease
// it names); the agent stays up and answers a good call after. Seeded: NETLEASE_FUZZ_SEED=<n>
// replays a run; a failure prints its seed, path and shrunk counterexample. `npm run fuzz` is
// the long run.
import fc from 'fast-check';
import { isAlive } from '../../tools/processes';
import { expectReplayed } from '../harness/replay';
import { FuzzSession } from '../fuzz/session';
import { goodCalls, openFuzzSite, type FuzzSite } from '../fuzz/site';

const SHIM_INPUTS = 300;
const API_INPUTS = 800;
const seed = Number(process.env.NETLEASE_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
let site: FuzzSite;
let session: FuzzSession;

beforeAll(async () => {
  process.stdout.write(`cni-fuzz: seed ${seed} (NETLEASE_FUZZ_SEED=${seed} replays it)\n`);
  site = await openFuzzSite('cni-fuzz');
  session = new FuzzSession(site);
}, 90_000);
afterAll(async () => {
  process.stdout.write(`cni-fuzz: seed ${seed}: ${JSON.stringify(session?.counts)}\n`);
  await site?.close();
});

test(`${SHIM_INPUTS} generated calls through the shim executable`, async () => {
  await fc.assert(session.shimProperty(), { seed, numRuns: SHIM_INPUTS });
  expect(session.counts.shim.inputs).toBe(SHIM_INPUTS);
  // The generators reach both sides: refusals, and calls that succeed.
  expect(session.counts.shim.rejected).toBeGreaterThan(SHIM_INPUTS / 3);
  expect(session.counts.shim.accepted).toBeGreaterThan(SHIM_INPUTS / 20);
}, 240_000);

test(`${API_INPUTS} generated requests straight to the agent's CNI API`, async () => {
  await fc.assert(session.apiProperty(), { seed, numRuns: API_INPUTS });
  expect(session.counts.api.inputs).toBe(API_INPUTS);
  expect(session.counts.api.rejected).toBeGreaterThan(API_INPUTS / 3);
}, 240_000);

test('no lease or node workflow that only refused calls named', async () => {
  expect(await session.strayWorkflows()).toEqual([]);
});

test('after the fuzz the agent is the same process and answers a good ADD and DEL', async () => {
  expect(isAlive(site.agent().pid)).toBe(true);
  expect(site.agent().output()).not.toMatch(/"level":"(error|fatal)"/);
  const { added, deleted } = await goodCalls(site);
  expect(added.json).toMatchObject({ cniVersion: '1.1.0', ips: expect.any(Array) });
  expect({ code: deleted.exitCode, out: deleted.stdout }).toEqual({ code: 0, out: '' });
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(site.scenario.temporal, 3);
});
