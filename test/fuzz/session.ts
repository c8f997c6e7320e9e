// A fuzzing session on a site: generated calls through a target, each judged (oracle.ts), the
// state it must not change compared before and after (state.ts), the agent checked alive. Runs
// are fast-check properties with a seed; a failure is shrunk and recorded with its seed and path,
// and the run goes on with the next seed until the inputs asked for have been tried.
import fc from 'fast-check';
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import { isAlive } from '../../tools/processes';
import { apiInputs, apiRequest, printableApi, type ApiInput } from './api-bodies';
import { emptyCounts, tally, type Counts, type Finding, type Target } from './counts';
import { describeInput, type FuzzInput } from './input';
import { fuzzInputs } from './inputs';
import { judgeApi, shimCouldPost } from './api-oracle';
import { judge, type Judged } from './oracle';
import { agentTemporalAddress, DEFAULT_TEMPORAL, shimSettings } from './shim-model';
import type { FuzzSite } from './site';
import { differences, leaseIdOf, workflowsOf, type Snapshot } from './state';
import { callApi, callShim, CALL_DEADLINE_MS, execEnv } from './targets';

/** NETLEASE_FUZZ_TRACE=1: every call and its verdict, as it happens. */
const TRACE = process.env.NETLEASE_FUZZ_TRACE === '1';

class Violation extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
  }
}

export class FuzzSession {
  readonly counts: Record<Target, Counts> = { shim: emptyCounts(), api: emptyCounts() };
  readonly findings: Finding[] = [];
  /** Leases and nodes that calls other than plain refusals may have started. */
  private readonly made = new Set<string>();
  /** The state after the last refused call (no lease): the next call's "before". */
  private last: Snapshot | undefined;

  constructor(
    private readonly site: FuzzSite,
    private readonly say: (line: string) => void = () => undefined,
  ) {}

  /** One call, judged; the problems found (empty: none). */
  private async once(
    target: Target,
    call: FuzzInput | undefined,
    ask: () => Promise<Judged & { ms: number }>,
  ) {
    const leaseId = call && leaseIdOf(call);
    if (TRACE) this.say(`${target} #${this.counts[target].inputs}: ${call ? describeInput(call) : 'raw'}`);
    const before = await this.before(leaseId);
    const judged = await ask();
    if (TRACE)
      this.say(
        `  ${JSON.stringify(judged.verdict)} ${Math.round(judged.ms)} ms ${judged.problems.join('; ')}`,
      );
    const counts = this.counts[target];
    tally(counts, judged);
    if (counts.inputs % 500 === 0)
      this.say(`${target}: ${counts.inputs} inputs, ${JSON.stringify(counts.codes)}`);
    const problems = [...judged.problems, ...(await this.agentAlive(target))];
    const { verdict } = judged;
    const refused = verdict.kind === 'rejected' && !verdict.transient;
    const changed = refused ? await this.changedBy(before, leaseId) : [];
    if (changed.length) counts.stateViolations++;
    problems.push(...changed.map((line) => `a rejected call changed state: ${line}`));
    if (!refused || changed.length) {
      if (call) for (const id of workflowsOf(call)) this.made.add(id);
      this.last = undefined; // what it set going may change the state after the answer: read it anew
      await this.site.settle(leaseId);
    }
    return problems;
  }

  /** The state before a call: the last one read, when nothing since could have changed it, and the call's lease. */
  private async before(leaseId: string | undefined): Promise<Snapshot> {
    this.last ??= await this.site.snapshot(undefined);
    const lease = leaseId ? await this.site.leaseMark(leaseId) : undefined;
    return { ...this.last, ...(lease ? { lease } : {}) };
  }

  /** What a refused call changed; the state read becomes the next call's "before". */
  private async changedBy(before: Snapshot, leaseId: string | undefined): Promise<string[]> {
    const after = await this.site.snapshot(leaseId);
    this.last = { files: after.files, host: after.host, pod: after.pod };
    return differences(before, after);
  }

  /** The agent is the same live process; one that died is counted and started again. */
  private async agentAlive(target: Target): Promise<string[]> {
    const agent = this.site.agent();
    if (isAlive(agent.pid)) return [];
    this.counts[target].crashes++;
    this.say(`${target}: the node agent died (logs in ${this.site.dir}): ${agent.output().slice(-1500)}`);
    this.last = undefined;
    await this.site.restartAgent();
    return [`the node agent died: ${agent.output().slice(-1500)}`];
  }

  /**
   * Leases and nodes that no call accounts for: ones only plainly refused calls named (visibility
   * may lag; the per-call check does not). `query`: where to look (default: the site's task
   * queue; a run with a server of its own looks at every lease and node on it).
   */
  async strayWorkflows(query = `TaskQueue = '${this.site.terms.taskQueue}'`): Promise<string[]> {
    const { client } = this.site.scenario.temporal;
    const allowed = new Set([
      ...this.made,
      nodeWorkflowId(this.site.terms.node),
      ...this.site.terms.offered.map((p) => leaseWorkflowId(p.uid, 'eth0')),
    ]);
    const stray: string[] = [];
    for await (const execution of client.workflow.list({ query })) {
      const id = execution.workflowId;
      if ((id.startsWith('lease/') || id.startsWith('node/')) && !allowed.has(id))
        stray.push(`${id} (${execution.status.name})`);
    }
    return stray;
  }

  /** Whether the agent holds an offer of the call's lease now, before the call. */
  private async offerHeld(call: FuzzInput | undefined): Promise<boolean> {
    const leaseId = call && leaseIdOf(call);
    return leaseId !== undefined && (await this.site.offerHeld(leaseId));
  }

  private throwing(problems: string[]): void {
    if (problems.length) throw new Violation(problems);
  }

  shimProperty() {
    return fc.asyncProperty(fuzzInputs(this.site.terms), async (input) => {
      const socket = shimSettings(input.stdin)?.socket;
      const unreachable = socket !== undefined && socket !== this.site.terms.agentSocket;
      // The shim would queue that DEL where nothing of this test is (the default queue, or a junk path).
      fc.pre(!(unreachable && input.env.CNI_COMMAND === 'DEL'));
      fc.pre(agentTemporalAddress(input.stdin) !== DEFAULT_TEMPORAL);
      const problems = await this.once('shim', input, async () => {
        const offerHeld = await this.offerHeld(input);
        const outcome = await callShim(input, this.site.where());
        const carried = { ...input, env: execEnv(input.env) };
        const context = { target: 'shim' as const, unreachable, deadlineMs: CALL_DEADLINE_MS, offerHeld };
        return { ...judge(carried, outcome, context), ms: outcome.ms };
      });
      this.throwing(problems);
    });
  }

  apiProperty() {
    return fc.asyncProperty(apiInputs(this.site.terms).map(printableApi), async (input: ApiInput) => {
      fc.pre(!input.call || agentTemporalAddress(input.call.stdin) !== DEFAULT_TEMPORAL);
      const request = apiRequest(input, this.site.where());
      const posted = input.call && shimCouldPost(input.call, request.body) ? input : { raw: true };
      const problems = await this.once('api', input.call, async () => {
        const offerHeld = await this.offerHeld(input.call);
        const outcome = await callApi(this.site.terms.agentSocket, request);
        return { ...judgeApi(posted, outcome, CALL_DEADLINE_MS, offerHeld), ms: outcome.ms };
      });
      this.throwing(problems);
    });
  }

  /** `inputs` calls through `target` from `seed`; each failure is recorded, shrunk, and the run goes on. */
  async run(target: Target, inputs: number, seed: number): Promise<void> {
    const check = (params: { seed: number; numRuns: number }) =>
      target === 'shim' ? fc.check(this.shimProperty(), params) : fc.check(this.apiProperty(), params);
    let next = seed;
    for (let left = inputs; left > 0; next++) {
      const started = this.counts[target].inputs;
      const details = await check({ seed: next, numRuns: left });
      left -= details.failed ? details.numRuns : left;
      if (!details.failed) break;
      const problems =
        details.errorInstance instanceof Violation
          ? details.errorInstance.problems
          : [String(details.errorInstance)];
      const counterexample = details.counterexample ? fc.stringify(details.counterexample[0]) : '?';
      this.findings.push({ target, seed: next, path: details.counterexamplePath, counterexample, problems });
      this.say(
        `${target}: seed ${next} path ${details.counterexamplePath}: ${counterexample}\n  ${problems.join('\n  ')}`,
      );
      this.say(
        `${target}: ${this.counts[target].inputs - started} inputs (shrinking included) in that round`,
      );
    }
  }
}
