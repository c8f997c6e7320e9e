// The Kubernetes conformance subset for pod networking that `npm run conformance` runs, the
// ginkgo focus that selects exactly those specs, and the summary read from ginkgo's JSON report.
import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';

/**
 * Each spec's full text up to its labels (`[NodeConformance]`, `[Conformance]`, ...). The first
 * six are the ones the heavy pass of `npm test` runs (`--core`): pod-to-pod and node-to-pod over
 * the pods' addresses, the host IP and both families; `npm run conformance` runs them all.
 */
export const SPECS = [
  '[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: http',
  '[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: udp',
  '[sig-network] Networking Granular Checks: Pods should function for node-pod communication: http',
  '[sig-network] Networking Granular Checks: Pods should function for node-pod communication: udp',
  '[sig-node] Pods should get a host IP',
  '[sig-network] [Feature:IPv6DualStack] should create pod, add ipv6 and ipv4 ip to pod ips',
  // Pod to pod over the pods' addresses, beyond the conformance-tagged six.
  '[sig-network] [Feature:IPv6DualStack] should be able to reach pod on ipv4 and ipv6 ip',
  '[sig-network] NoSNAT Should be able to send traffic between Pods without SNAT',
  '[sig-network] Connectivity Pod Lifecycle should be able to connect from a Pod to a terminating Pod',
  '[sig-network] Connectivity Pod Lifecycle should be able to connect to other Pod from a terminating Pod',
  // The pods' addresses as the EndpointSlice controller publishes them (no traffic through a Service).
  '[sig-network] EndpointSlice should create Endpoints and EndpointSlices for Pods matching a Service',
];

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A spec followed by its labels or nothing. Ginkgo matches the focus against the suite's name and
 * the spec's text (`Kubernetes e2e suite [sig-node] Pods ...`), so no `^`.
 */
const matcher = (spec: string) => `${escape(spec)}( \\[|$)`;

/** The subset `npm test` runs (`npm run conformance -- --core`). */
export const CORE_SPECS = SPECS.slice(0, 6);

/** Selects exactly `specs`. */
export const focusOf = (specs: readonly string[]): string => specs.map(matcher).join('|');

const SpecReportSchema = z
  .object({
    LeafNodeType: z.string(),
    ContainerHierarchyTexts: z.array(z.string()).nullable().default([]),
    LeafNodeText: z.string(),
    State: z.string(),
    /** Nanoseconds. */
    RunTime: z.number(),
    Failure: z.object({ Message: z.string() }).passthrough().optional(),
  })
  .passthrough();
const ReportSchema = z.array(
  z.object({ SpecReports: z.array(SpecReportSchema).nullable().default([]) }).passthrough(),
);

export interface SpecResult {
  spec: string;
  /** `passed`, `failed`, `skipped`, ... as ginkgo says; `not run` when the report lacks it. */
  state: string;
  seconds: number;
  failure?: string;
}

/** Each of `specs` with its outcome in ginkgo's JSON report (`not run` when it is not in it). */
export function readResults(reportFile: string, specs: readonly string[] = SPECS): SpecResult[] {
  const reports = existsSync(reportFile)
    ? ReportSchema.parse(JSON.parse(readFileSync(reportFile, 'utf8')))
    : [];
  const ran = reports
    .flatMap((r) => r.SpecReports ?? [])
    .filter((s) => s.LeafNodeType === 'It')
    .map((s) => ({ text: [...(s.ContainerHierarchyTexts ?? []), s.LeafNodeText].join(' '), report: s }));
  return specs.map((spec) => {
    const found = ran.find(({ text }) => new RegExp(matcher(spec)).test(text))?.report;
    if (!found) return { spec, state: 'not run', seconds: 0 };
    const failure = found.Failure?.Message.split('\n')[0];
    return { spec, state: found.State, seconds: found.RunTime / 1e9, ...(failure ? { failure } : {}) };
  });
}

/** One line per spec, then the count and the run's time. */
export function summary(results: SpecResult[], totalSeconds: number): string {
  const lines = results.map(
    (r) =>
      `  ${r.state.padEnd(8)} ${r.seconds.toFixed(1).padStart(6)} s  ${r.spec}` +
      (r.failure ? `\n           ${r.failure}` : ''),
  );
  const passed = results.filter((r) => r.state === 'passed').length;
  return [...lines, `${passed} of ${results.length} passed; the run took ${totalSeconds.toFixed(0)} s`].join(
    '\n',
  );
}
