// What the node agent's API must answer a request straight to it: for a call the shim could
// post, HTTP 200 with {exitCode, stdout} holding a CNI answer (judged as the shim's, oracle.ts);
// for anything else, a 4xx.
import { AGENT_MAX_BODY } from './api-bodies';
import type { FuzzInput } from './input';
import { judge, type Judged } from './oracle';

/** The agent's answer to a request straight to its API (api-bodies.ts). */
export function judgeApi(
  input: { call?: FuzzInput; raw?: unknown },
  outcome: { status?: number; body: string; timedOut: boolean; ms: number; error?: string },
  deadlineMs: number,
  offerHeld = false,
): Judged {
  if (outcome.timedOut)
    return { verdict: { kind: 'broken' }, problems: [`hang: no answer within ${deadlineMs} ms`] };
  if (outcome.status === undefined)
    return {
      verdict: { kind: 'broken' },
      problems: [`no HTTP answer: ${outcome.error ?? 'connection closed'}`],
    };
  if (!input.call) {
    const refused = outcome.status >= 400 && outcome.status < 500;
    return {
      verdict: refused ? { kind: 'rejected', code: outcome.status, transient: false } : { kind: 'accepted' },
      problems: refused ? [] : [`HTTP ${outcome.status} to a request the shim never sends`],
    };
  }
  if (outcome.status !== 200)
    return {
      verdict: { kind: 'broken' },
      problems: [`HTTP ${outcome.status} to a call the shim could post: ${outcome.body.slice(0, 200)}`],
    };
  let answer: { exitCode?: unknown; stdout?: unknown } = {};
  try {
    answer = JSON.parse(outcome.body) as typeof answer;
  } catch {
    return { verdict: { kind: 'broken' }, problems: [`not a JSON answer: ${outcome.body.slice(0, 200)}`] };
  }
  if (typeof answer.exitCode !== 'number' || typeof answer.stdout !== 'string')
    return {
      verdict: { kind: 'broken' },
      problems: [`not an {exitCode, stdout} answer: ${outcome.body.slice(0, 200)}`],
    };
  const call = { exitCode: answer.exitCode, stdout: answer.stdout, ms: outcome.ms, timedOut: false };
  return judge(input.call, call, { target: 'api', deadlineMs, offerHeld });
}

/**
 * Whether the shim could post this call: no larger than the agent reads (else the shim refuses it,
 * 5), and text it passes (bytes, decoded as UTF-8: no lone surrogate; no NUL in a variable).
 */
export function shimCouldPost(call: FuzzInput, body: string | Uint8Array): boolean {
  const cniValues = Object.entries(call.env).flatMap(([name, value]) =>
    name.startsWith('CNI_') ? [value] : [],
  );
  const notText = (text: string) => /\p{Cs}/u.test(text);
  return (
    Buffer.byteLength(body) <= AGENT_MAX_BODY &&
    !notText(call.stdin) &&
    !cniValues.some((value) => notText(value) || value.includes('\0'))
  );
}
