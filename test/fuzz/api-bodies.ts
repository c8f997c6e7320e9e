// Requests straight to the node agent's CNI API: mostly what the shim would post for a generated
// call, and now and then what it never posts (other methods and paths, bodies that are not
// {env, stdin} of strings, cut short, too large). The first get a CNI answer; the others a 400.
import fc from 'fast-check';
import { anyJson, anyText } from './hostile-values';
import { describeInput, printable, shortText, type FuzzInput, type FuzzTerms } from './input';
import { fuzzInputs } from './inputs';
import { shimBody, type ApiRequest, type Where } from './targets';

/** The agent's limit on a request body (worker/agent/cni-api.ts MAX_BODY_BYTES). */
export const AGENT_MAX_BODY = 16 << 20;

export interface ApiInput {
  /** A call the shim could post: answered with a CNI answer (200). */
  call?: FuzzInput;
  /** Anything else: answered with 400 and no state changed. */
  raw?: { request: ApiRequest; what: string };
}

const raw = (what: string, request: Partial<ApiRequest> & Pick<ApiRequest, 'body'>): ApiInput => ({
  raw: { what, request: { method: 'POST', path: '/cni', ...request } },
});

const goodEnv = { CNI_COMMAND: 'STATUS' };

const rawBodies: fc.Arbitrary<ApiInput> = fc.oneof(
  anyJson.map((v) => raw(`JSON ${shortText(JSON.stringify(v) ?? '')}`, { body: JSON.stringify(v) ?? '' })),
  anyText.map((t) => raw(`text ${shortText(t)}`, { body: t })),
  anyJson
    .filter((v) => typeof v !== 'string')
    .map((v) => raw('a stdin that is not a string', { body: JSON.stringify({ env: goodEnv, stdin: v }) })),
  anyJson
    .filter((v) => typeof v !== 'string')
    .map((v) =>
      raw('an env value that is not a string', {
        body: JSON.stringify({ env: { CNI_COMMAND: v }, stdin: '' }),
      }),
    ),
  fc.constantFrom(
    raw('no env', { body: '{"stdin":"{}"}' }),
    raw('env an array', { body: '{"env":[],"stdin":""}' }),
    raw('cut short', { body: '{"env":{"CNI_COMMAND":"ADD"},"stdin":"{\\"cni' }),
    raw('GET', { method: 'GET', body: '' }),
    raw('PUT', { method: 'PUT', body: JSON.stringify({ env: goodEnv, stdin: '' }) }),
    raw('another path', { path: '/cni/', body: JSON.stringify({ env: goodEnv, stdin: '' }) }),
    raw('a path with a query', { path: '/cni?x=1', body: JSON.stringify({ env: goodEnv, stdin: '' }) }),
    raw('one byte over the limit', { body: ' '.repeat(AGENT_MAX_BODY + 1) }),
    raw('nested 100000 deep', { body: `${'['.repeat(100_000)}${']'.repeat(100_000)}` }),
  ),
);

/** Mostly calls the shim could post, a fifth raw requests. */
export function apiInputs(terms: FuzzTerms): fc.Arbitrary<ApiInput> {
  return fc.oneof(
    { weight: 4, arbitrary: fuzzInputs(terms).map((call) => ({ call })) },
    { weight: 1, arbitrary: rawBodies },
  );
}

export function apiRequest(input: ApiInput, where: Where): ApiRequest {
  if (input.call) return { method: 'POST', path: '/cni', body: shimBody(input.call, where) };
  return (input.raw as { request: ApiRequest }).request;
}

export const describeApiInput = (input: ApiInput): string =>
  input.call ? describeInput(input.call) : `{raw request: ${input.raw?.what}}`;

/** Printed by fast-check in a counterexample. */
export const printableApi = (input: ApiInput): ApiInput => {
  if (input.call) printable(input.call);
  return Object.assign(input, { [fc.toStringMethod]: () => describeApiInput(input) });
};
