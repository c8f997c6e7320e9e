// Kubernetes' own conformance specs for pod networking (tools/conformance-specs) against netlease
// installed as pods on two real nodes: `npm run conformance` as a child process, in the in-cluster
// pass of `npm test` (NETLEASE_E2E_IN_CLUSTER=1; skipped otherwise). Each spec must have run and
// passed, as ginkgo's JSON report says.
import { join } from 'node:path';
import { CORE_SPECS, readResults } from '../../tools/conformance-specs';
import { runToEnd } from '../../tools/processes';
import { inClusterMode } from '../harness/real-cluster';

const ROOT = join(__dirname, '..', '..', '..');
const inCluster = inClusterMode() ? test : test.skip;

inCluster(
  `the ${CORE_SPECS.length} core conformance specs pass against netlease installed as pods`,
  async () => {
    const started = Date.now();
    // npm test's bootstrap built everything; one mid-run could rebuild dist/ under the other tests.
    const run = await runToEnd(process.execPath, [
      join(ROOT, 'dist', 'tools', 'conformance.js'),
      '--no-bootstrap',
      '--core', // the rest: `npm run conformance`
    ]);
    process.stdout.write(`conformance: ${((Date.now() - started) / 1000).toFixed(0)} s\n${run.stdout}`);
    const stateDir = join(process.env.NETLEASE_STATE_DIR ?? join(ROOT, '.netlease'), 'conformance');
    const results = readResults(join(stateDir, 'report.json'), CORE_SPECS);
    expect(results.map((r) => [r.spec, r.state, r.failure ?? ''])).toEqual(
      CORE_SPECS.map((s) => [s, 'passed', '']),
    );
    expect({ exit: run.exitCode, stderr: run.stderr.trim().slice(-2000) }).toMatchObject({ exit: 0 });
  },
  1_200_000,
);
