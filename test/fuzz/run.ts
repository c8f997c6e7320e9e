// `npm run fuzz -- --inputs N --seed S [--shim-share F] [--go-fuzztime T]`: the long fuzz run.
// Its own Temporal and kube-apiserver, the real node agent process; N generated calls, a share
// through the shim executable and the rest straight to the agent's API; then Go's fuzzing of
// the shim's parsers, each target for T (`100000x` executions by default). Prints inputs per
// target, crashes and hangs, refused calls that changed state, answer problems, stray workflows,
// whether the agent still answers, and the wall time; exits 1 on any finding.
import { parseArgs } from 'node:util';
import { isAlive } from '../../tools/processes';
import { LEASE_WORKFLOW_TYPE } from '../../workflows/lease-messages';
import { NODE_WORKFLOW_TYPE } from '../../workflows/node-messages';
import { replayTaskQueue } from '../harness/replay';
import { countsRow } from './counts';
import { goFuzz, goFuzzTargets, type GoFuzzResult } from './go-fuzz';
import { FuzzSession } from './session';
import { goodCalls, openFuzzSite, type FuzzSite } from './site';
import { startFuzzStack } from './stack';

const say = (line: string) => process.stdout.write(`fuzz: ${line}\n`);

function options() {
  const { values } = parseArgs({
    options: {
      inputs: { type: 'string', default: '20000' },
      seed: { type: 'string', default: String(Math.floor(Math.random() * 2 ** 31)) },
      'shim-share': { type: 'string', default: '0.1' },
      'go-fuzztime': { type: 'string', default: '100000x' },
    },
  });
  const inputs = Number(values.inputs);
  const shim = Math.round(inputs * Number(values['shim-share']));
  return { shim, api: inputs - shim, seed: Number(values.seed), goFuzztime: values['go-fuzztime'] };
}

/** After the fuzz: leases and nodes no call accounts for, replay, and a good call answered. */
async function afterFuzz(site: FuzzSite, session: FuzzSession) {
  const stray = await session.strayWorkflows(
    `WorkflowType IN ('${LEASE_WORKFLOW_TYPE}', '${NODE_WORKFLOW_TYPE}')`,
  );
  const replay = await replayTaskQueue(site.scenario.temporal.client, site.scenario.temporal.taskQueue);
  const { added, deleted } = await goodCalls(site);
  const answered = added.exitCode === 0 && Array.isArray(added.json?.ips) && deleted.exitCode === 0;
  const alive = isAlive(site.agent().pid);
  say(`the agent (pid ${site.agent().pid}) alive: ${alive}; a good ADD and DEL answered: ${answered}`);
  say(`stray workflows ${stray.length}: ${stray.join(', ')}`);
  say(`histories replayed ${replay.replayed}, diverged ${replay.errors.length}: ${replay.errors.join('; ')}`);
  return stray.length + replay.errors.length + (alive && answered ? 0 : 1);
}

async function fuzzAgent(shim: number, api: number, seed: number) {
  const stack = await startFuzzStack();
  const site = await openFuzzSite('fuzz');
  // Interrupted: every process and namespace this run made goes with it.
  const interrupted = async () => {
    say('interrupted: stopping the agent, the workers and the servers');
    await site.close().catch(() => undefined);
    await stack.stop();
    process.exit(130);
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void interrupted());
  try {
    const session = new FuzzSession(site, say);
    say(`seed ${seed}: ${shim} calls through the shim, ${api} to the agent's API`);
    const fdsBefore = site.agentFds();
    await session.run('shim', shim, seed);
    await session.run('api', api, seed);
    say(`the agent's open files: ${fdsBefore} before, ${site.agentFds()} after`);
    return { session, failures: await afterFuzz(site, session) };
  } finally {
    await site.close();
    await stack.stop();
  }
}

function report(session: FuzzSession, go: GoFuzzResult[], seed: number): void {
  say(`--- seed ${seed}`);
  say(countsRow('shim', session.counts.shim));
  say(countsRow('api', session.counts.api));
  for (const g of go)
    say(`go     ${g.target}: execs ${g.execs}${g.failed ? `, FAILED:\n${g.report}` : ', no failure'}`);
  const goExecs = go.reduce((sum, g) => sum + g.execs, 0);
  const { shim, api } = session.counts;
  say(
    `inputs in all ${shim.inputs + api.inputs + goExecs} (shim ${shim.inputs}, API ${api.inputs}, Go ${goExecs})`,
  );
  say(`findings ${session.findings.length}`);
  for (const f of session.findings)
    say(
      `finding ${f.target} seed ${f.seed} path ${f.path}: ${f.counterexample}\n  ${f.problems.join('\n  ')}`,
    );
}

async function main(): Promise<void> {
  const started = Date.now();
  const { shim, api, seed, goFuzztime } = options();
  const { session, failures } = await fuzzAgent(shim, api, seed);
  const agentSeconds = Math.round((Date.now() - started) / 1000);
  const go: GoFuzzResult[] = [];
  for (const target of goFuzzTargets()) {
    say(`go ${target} for ${goFuzztime}`);
    go.push(await goFuzz(target, goFuzztime));
  }
  report(session, go, seed);
  say(`wall time ${Math.round((Date.now() - started) / 1000)} s (the agent's targets ${agentSeconds} s)`);
  process.exitCode = failures + session.findings.length + go.filter((g) => g.failed).length ? 1 : 0;
}

main().catch((err: unknown) => {
  process.stderr.write(`fuzz: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
