// `npm run conformance` selects exactly its specs from e2e.test's 7,144 (ginkgo's focus is a
// regular expression over the suite's name and each spec's full text, labels included) and reads each one's outcome
// from ginkgo's JSON report; a spec missing from the report counts as not run, never as passed.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CORE_SPECS, focusOf, readResults, SPECS, summary } from '../../tools/conformance-specs';

/** Spec texts as ginkgo prints them (`--ginkgo.dry-run -v` of e2e.test v1.34.4). */
const SELECTED = [
  '[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: http [NodeConformance] [Conformance]',
  '[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: udp [NodeConformance] [Conformance]',
  '[sig-network] Networking Granular Checks: Pods should function for node-pod communication: http [LinuxOnly] [NodeConformance] [Conformance]',
  '[sig-network] Networking Granular Checks: Pods should function for node-pod communication: udp [LinuxOnly] [NodeConformance] [Conformance]',
  '[sig-node] Pods should get a host IP [NodeConformance] [Conformance]',
  '[sig-network] [Feature:IPv6DualStack] should create pod, add ipv6 and ipv4 ip to pod ips',
  '[sig-network] [Feature:IPv6DualStack] should be able to reach pod on ipv4 and ipv6 ip',
  '[sig-network] NoSNAT Should be able to send traffic between Pods without SNAT',
  '[sig-network] Connectivity Pod Lifecycle should be able to connect from a Pod to a terminating Pod',
  '[sig-network] Connectivity Pod Lifecycle should be able to connect to other Pod from a terminating Pod',
  '[sig-network] EndpointSlice should create Endpoints and EndpointSlices for Pods matching a Service [Conformance]',
];
const NEIGHBOURS = [
  '[sig-network] EndpointSlice should create and delete Endpoints and EndpointSlices for a Service with a selector specified [Conformance]',
  '[sig-network] Connectivity Pod Lifecycle should be able to have zero downtime on a Blue Green deployment using Services and Readiness Gates',
  '[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: sctp [LinuxOnly] [Feature:SCTPConnectivity]',
  '[sig-network] [Feature:IPv6DualStack] should create pod, add ipv6 and ipv4 ip to host ips',
  '[sig-node] Pods should get a host IP when pod has hostNetwork',
  '[sig-network] Networking Granular Checks: Pods should function for node-pod communication: httpx',
];

test('the focus selects the specs and none of their neighbours', () => {
  const focus = new RegExp(focusOf(SPECS));
  expect(SELECTED.filter((text) => focus.test(`Kubernetes e2e suite ${text}`))).toEqual(SELECTED);
  expect(NEIGHBOURS.filter((text) => focus.test(`Kubernetes e2e suite ${text}`))).toEqual([]);
});

test("npm test's core subset selects the six the issue named and none of the rest", () => {
  const core = new RegExp(focusOf(CORE_SPECS));
  const ran = (text: string) => core.test(`Kubernetes e2e suite ${text} [Conformance]`);
  expect(SPECS.filter(ran)).toEqual(CORE_SPECS);
  expect(CORE_SPECS).toHaveLength(6);
  expect(CORE_SPECS.filter((s) => /Granular Checks|host IP|add ipv6 and ipv4 ip to pod ips/.test(s))).toEqual(
    CORE_SPECS,
  );
});

test("each spec's outcome and time come from the report; one it lacks is not run", () => {
  const dir = mkdtempSync(join(tmpdir(), 'netlease-conformance-'));
  try {
    const file = join(dir, 'report.json');
    const spec = (containers: string[], leaf: string, State: string, seconds: number, failure?: string) => ({
      LeafNodeType: 'It',
      ContainerHierarchyTexts: containers,
      LeafNodeText: leaf,
      State,
      RunTime: seconds * 1e9,
      ...(failure ? { Failure: { Message: `${failure}\nmore lines` } } : {}),
    });
    const granular = ['[sig-network] Networking', 'Granular Checks: Pods'];
    writeFileSync(
      file,
      JSON.stringify([
        {
          SpecReports: [
            { LeafNodeType: 'SynchronizedBeforeSuite', LeafNodeText: '', State: 'passed', RunTime: 0 },
            spec(
              granular,
              'should function for intra-pod communication: http [NodeConformance] [Conformance]',
              'passed',
              16.2,
            ),
            spec(
              granular,
              'should function for intra-pod communication: udp [NodeConformance] [Conformance]',
              'failed',
              89,
              'no endpoints',
            ),
            spec(['[sig-node] Pods'], 'should get a host IP [NodeConformance] [Conformance]', 'passed', 2.2),
            spec(
              ['[sig-network] [Feature:IPv6DualStack]'],
              'should create pod, add ipv6 and ipv4 ip to host ips',
              'passed',
              2,
            ),
          ],
        },
      ]),
    );
    const results = readResults(file);
    expect(results.map((r) => [r.state, r.seconds, r.failure])).toEqual([
      ['passed', 16.2, undefined],
      ['failed', 89, 'no endpoints'],
      ['not run', 0, undefined],
      ['not run', 0, undefined],
      ['passed', 2.2, undefined],
      ['not run', 0, undefined], // the host-ips spec is another one
      ...SPECS.slice(6).map(() => ['not run', 0, undefined]),
    ]);
    expect(results.map((r) => r.spec)).toEqual(SPECS);
    expect(summary(results, 120).split('\n').pop()).toBe(`2 of ${SPECS.length} passed; the run took 120 s`);
    expect(readResults(join(dir, 'none.json')).map((r) => r.state)).toEqual(SPECS.map(() => 'not run'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
