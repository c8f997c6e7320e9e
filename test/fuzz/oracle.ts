// What an answer must be: a CNI error (the spec's code, a message, naming the changed field when
// one change broke the call) or a valid result for the command, on time; "try again later" only
// when the call depends on something a retry may outlive, never for a mistake in the request.
import type { FuzzInput, Mutation } from './input';
import type { CallOutcome } from './targets';

/**
 * How a call was made: through the shim or straight to the agent's API; `unreachable`: its
 * configuration sends the shim to another socket than the test agent's (shim-model.ts).
 */
export interface Context {
  target: 'shim' | 'api';
  unreachable?: boolean;
  deadlineMs: number;
  /**
   * The agent held an offer of the call's lease before it (a pre-produced one, or the answer of an
   * earlier cold ADD, whose repeat it answers the same): a change the offer does not depend on may
   * be answered from it (the CI's fuzz, seed 788759877: a repeat ADD naming another task queue).
   */
  offerHeld?: boolean;
}

/** The spec's codes (1.1.0 "Error"), and netlease's own 100-102 (cni/errors.ts). */
const KNOWN_CODES = new Set([1, 2, 3, 4, 5, 6, 7, 11, 50, 51, 100, 101, 102]);
const SILENT_SUCCESS = new Set(['DEL', 'CHECK', 'GC', 'STATUS']);

export type Verdict =
  { kind: 'accepted' } | { kind: 'rejected'; code: number; transient: boolean } | { kind: 'broken' };

export interface Judged {
  verdict: Verdict;
  problems: string[];
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function parseLine(stdout: string): { value?: unknown; problem?: string } {
  if (!stdout.endsWith('\n') || stdout.indexOf('\n') !== stdout.length - 1)
    return { problem: `stdout is not one line: ${JSON.stringify(stdout.slice(0, 200))}` };
  try {
    return { value: JSON.parse(stdout) };
  } catch {
    return { problem: `stdout is not JSON: ${JSON.stringify(stdout.slice(0, 200))}` };
  }
}

/**
 * A string as UTF-8 carries it: a lone surrogate (JSON's `"\ud800"`) becomes U+FFFD, as the Go shim
 * decodes it; the answer can only echo that (the fuzz found it, seed 1866388292).
 */
const wellFormed = (value: unknown): unknown =>
  typeof value === 'string'
    ? value.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd')
    : value;

/**
 * The cniVersion the call asked for, as the agent reads stdin; 1.1.0 from the shim when its
 * reader refused stdin.
 */
function requestedVersion(input: FuzzInput, { target }: Context): string {
  if (target === 'shim' && input.mutations.some((m) => m.shimUnreadable)) return '1.1.0';
  try {
    const conf: unknown = JSON.parse(input.stdin);
    const version = isObject(conf) ? conf.cniVersion : undefined;
    return typeof version === 'string' && version !== '' ? version : '1.1.0';
  } catch {
    return '1.1.0';
  }
}

function errorProblems(input: FuzzInput, error: unknown, context: Context): string[] {
  if (!isObject(error)) return ['exit status 1 without a CNI error object'];
  const problems: string[] = [];
  const { code, msg, details, cniVersion } = error;
  if (typeof code !== 'number' || !KNOWN_CODES.has(code))
    problems.push(`code ${String(code)} is not a CNI code`);
  if (typeof msg !== 'string' || msg === '') problems.push('no msg');
  if (details !== undefined && typeof details !== 'string') problems.push('details is not a string');
  const extra = Object.keys(error).filter((k) => !['cniVersion', 'code', 'msg', 'details'].includes(k));
  if (extra.length) problems.push(`unexpected keys ${extra.join(', ')}`);
  // 6 and 5: the shim could not read stdin, nor its version.
  const asked = requestedVersion(input, context);
  if (code !== 6 && code !== 5 && wellFormed(cniVersion) !== wellFormed(asked))
    problems.push(`cniVersion ${JSON.stringify(cniVersion)}, the call asked for ${JSON.stringify(asked)}`);
  return problems;
}

function resultProblems(input: FuzzInput, result: unknown, context: Context): string[] {
  const command = input.env.CNI_COMMAND;
  if (!isObject(result)) return ['the result is not an object'];
  if (command === 'VERSION') {
    return Array.isArray(result.supportedVersions) ? [] : ['VERSION without supportedVersions'];
  }
  if (command !== 'ADD') return [`${command} printed a result: success is silent`];
  const problems: string[] = [];
  if (result.cniVersion !== requestedVersion(input, context))
    problems.push(`result cniVersion ${String(result.cniVersion)}`);
  const ips = result.ips;
  if (!Array.isArray(ips) || ips.length === 0) problems.push('an ADD result without ips');
  else if (!ips.every((ip) => isObject(ip) && typeof ip.address === 'string' && ip.address.includes('/')))
    problems.push(`ips without CIDR addresses: ${JSON.stringify(ips).slice(0, 200)}`);
  return problems;
}

/** The refusal answers the one change the call had: an expected code, the field named (4, 7). */
function refusalProblems(only: Mutation, command: string, code: number, text: string): string[] {
  // A valid change, or one only ADD asks about: the refusal may be for something else (the state's).
  if (!only.invalid || (only.addOnly && command !== 'ADD')) return [];
  const problems: string[] = [];
  if (only.codes && !only.codes.includes(code) && !(only.transient && code === 11))
    problems.push(`code ${code} for ${only.field} (${only.what}); expected ${only.codes.join(' or ')}`);
  if (only.names && [4, 7].includes(code) && !only.names.some((name) => text.includes(name)))
    problems.push(
      `the message does not name ${only.names.join(' or ')}: ${JSON.stringify(text.slice(0, 300))}`,
    );
  return problems;
}

/** Judges one call's answer. */
export function judge(input: FuzzInput, outcome: CallOutcome, context: Context): Judged {
  if (outcome.timedOut)
    return { verdict: { kind: 'broken' }, problems: [`hang: no answer within ${context.deadlineMs} ms`] };
  const command = input.env.CNI_COMMAND ?? '';
  const transient = context.unreachable === true || input.mutations.some((m) => m.transient);
  if (outcome.exitCode === 0) {
    if (outcome.stdout === '' && SILENT_SUCCESS.has(command))
      return { verdict: { kind: 'accepted' }, problems: [] };
    const line = parseLine(outcome.stdout);
    const problems = line.problem ? [line.problem] : resultProblems(input, line.value, context);
    const offered = (input.env.CNI_ARGS ?? '').includes('K8S_POD_NAME=offered-'); // site.ts names them so
    const fromOffer = offered || context.offerHeld === true;
    if (command === 'ADD' && input.mutations.some((m) => m.invalid && !(m.offerMayAnswer && fromOffer)))
      problems.push('an ADD with an invalid change was accepted');
    return { verdict: { kind: 'accepted' }, problems };
  }
  if (outcome.exitCode !== 1) {
    const stdout = JSON.stringify(outcome.stdout.slice(0, 300));
    return { verdict: { kind: 'broken' }, problems: [`exit status ${outcome.exitCode}, stdout ${stdout}`] };
  }
  const line = parseLine(outcome.stdout);
  if (line.problem) return { verdict: { kind: 'broken' }, problems: [line.problem] };
  const problems = errorProblems(input, line.value, context);
  const error = line.value as { code?: number; msg?: string; details?: string };
  const code = error.code ?? 0;
  // GC walks every lease of the node: with thousands made by the fuzz it may outlast its budget,
  // and the runtime's next GC goes on from there. That is time, not a mistake in the request.
  const gcOutlasted = command === 'GC' && /did not answer in time/.test(error.msg ?? '');
  if (code === 11 && !transient && !gcOutlasted)
    problems.push(`try again later (11) for a mistake in the request: ${error.msg}`);
  // STATUS: no agent polls where the config points (another namespace, node) is its answer to give.
  const noAgent = /no node agent polls/.test(error.msg ?? '');
  if (code === 50 && !(command === 'STATUS' && (transient || noAgent)))
    problems.push(`not available (50): ${error.msg}`);
  const [only] = input.mutations;
  if (only && input.mutations.length === 1)
    problems.push(...refusalProblems(only, command, code, `${error.msg ?? ''} ${error.details ?? ''}`));
  // A GC that outlasted its budget has done part of its work: its refusal may have changed state.
  return { verdict: { kind: 'rejected', code, transient: transient || gcOutlasted }, problems };
}
