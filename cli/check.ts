// `netleasectl check`, the calicoctl-ipam-check of netlease: every address held by exactly one
// open lease, every open lease's pod there by UID (a quorum read) and its workflow task not
// failing, every block owned by a live incarnation; with --node-agent-config, that agent's
// preProduce against its conflist. Reads only; exit 1 when it finds a problem (notes, such as a
// lease made by hand, do not count).
import { z } from 'zod';
import { addressOwnershipFindings, allocationCount } from '../domain/address-ownership';
import { NodeAgentConfigSchema, type NodeAgentConfig } from '../domain/config';
import { DEFAULT_CONFLIST } from '../domain/conflist';
import { leaseExecutions } from '../temporal/visibility';
import { loadConfigFile, preProduceAgreement } from '../worker/config-file';
import { argument, onlyOptions, positionals, type CommandLine } from './args';
import { checkPods, checkTasks, openLeasesNow, ownersOf, type Finding, type Note } from './check-leases';
import type { Context, Run } from './context';
import { emit } from './output';
import { readNodes, readPools } from './nodes';

export function checkCommand(line: CommandLine): Run {
  onlyOptions(line, ['node-agent-config']);
  positionals(line, []);
  const agent = nodeAgentConfig(line);
  return async (context: Context) => {
    const problems: Finding[] = [];
    const notes: string[] = [];
    const remarks: Note[] = [];
    if (agent) conflistCheck(agent.file, agent.config, problems, notes);
    const [listed, pools] = await Promise.all([
      leaseExecutions(context.client, context.taskQueue, { open: true }),
      readPools(context),
    ]);
    // The nodes the pools hand blocks to, listed by visibility yet or not.
    const owners = pools.flatMap((p) => Object.values(p.state?.blocks ?? {}).map((b) => b.node));
    const nodes = await readNodes(context, owners);

    // Addresses: every allocation's owner is an open lease, no address is held twice, and each
    // open lease's addresses are allocated to it (domain/address-ownership).
    for (const node of nodes)
      if (node.error)
        problems.push({
          check: 'addresses',
          problem: `node/${node.name}: state query failed: ${node.error}`,
        });
    const tables = nodes.map((n) => ({ node: n.name, tables: n.state?.tables ?? {} }));
    let leases = listed;
    let ownership = addressOwnershipFindings(tables, leases);
    // Visibility lags: nothing is a problem before the leases say so themselves.
    if (ownership.length) {
      leases = await openLeasesNow(context, listed, ownersOf(tables));
      ownership = addressOwnershipFindings(tables, leases);
    }
    for (const found of ownership) problems.push({ check: 'addresses', problem: found.message });
    const allocations = allocationCount(tables);
    notes.push(
      `addresses: ${allocations} allocations on ${nodes.length} nodes, ${leases.length} open leases`,
    );

    // Pods and workflow tasks: see check-leases.
    for (const found of [await checkPods(context, leases), await checkTasks(context, leases)]) {
      problems.push(...found.problems);
      remarks.push(...found.notes);
      notes.push(...found.checked);
    }
    const cluster = await context.cluster();
    const nodeUids = new Set((cluster ? await cluster.listNodes() : []).map((n) => n.metadata.uid));

    // Blocks: each node block and each pool block belongs to the node's current incarnation (or one
    // being compensated), and with a cluster that incarnation is a Node that exists.
    const byName = new Map(nodes.map((n) => [n.name, n]));
    const live = (node: string, incarnation: string): string | undefined => {
      const state = byName.get(node)?.state;
      if (!state) return `node/${node} is not an open node workflow`;
      if (state.retired[incarnation] !== undefined) return undefined; // being compensated
      if (incarnation !== state.incarnation)
        return `incarnation "${incarnation}" is not node ${node}'s current one ("${state.incarnation}")`;
      if (cluster && incarnation && !nodeUids.has(incarnation)) return `no Node has UID ${incarnation}`;
      return undefined;
    };
    let blocks = 0;
    for (const node of nodes)
      for (const b of node.blocks) {
        blocks++;
        const why = live(node.name, b.incarnation);
        if (why) problems.push({ check: 'blocks', problem: `block ${b.block} of node ${node.name}: ${why}` });
      }
    for (const pool of pools) {
      if (pool.error)
        problems.push({ check: 'blocks', problem: `${pool.workflowId}: state query failed: ${pool.error}` });
      for (const [block, owner] of Object.entries(pool.state?.blocks ?? {})) {
        blocks++;
        const why = live(owner.node, owner.incarnation);
        if (why)
          problems.push({
            check: 'blocks',
            problem: `block ${block} of ${pool.workflowId} (owner ${owner.node}): ${why}`,
          });
      }
    }
    notes.push(`blocks: ${blocks} block ownerships checked (nodes and pools)`);

    emit(
      context.output,
      { ok: problems.length === 0, problems, notes: remarks, checked: notes },
      () =>
        [
          ...notes.map((n) => `checked ${n}`),
          ...remarks.map((n) => `NOTE [${n.check}] ${n.note}`),
          ...problems.map((p) => `PROBLEM [${p.check}] ${p.problem}`),
          problems.length ? `${problems.length} problem(s) found` : 'OK: no problems found',
        ].join('\n') + '\n',
    );
    return problems.length ? 1 : 0;
  };
}

/** --node-agent-config <file>: read now, so a bad file is a usage error before connecting. */
function nodeAgentConfig(line: CommandLine): { file: string; config: NodeAgentConfig } | undefined {
  const given = line.values['node-agent-config'];
  if (given === undefined) return undefined;
  const file = argument(z.string().min(1, 'must not be empty'), given, '--node-agent-config');
  return { file, config: loadConfigFile(file, NodeAgentConfigSchema) };
}

/** The agent's preProduce against the conflist the node's runtime reads (domain/conflist). */
function conflistCheck(file: string, config: NodeAgentConfig, problems: Finding[], notes: string[]): void {
  const agreement = config.preProduce && preProduceAgreement(config.preProduce);
  if (!agreement) {
    notes.push(
      `conflist: skipped (${file} ${config.preProduce ? `names no preProduce.conflist and ${DEFAULT_CONFLIST} is absent` : 'has no preProduce'})`,
    );
    return;
  }
  notes.push(`conflist: ${file}'s preProduce against ${agreement.conflist}`);
  if (agreement.mismatch) problems.push({ check: 'conflist', problem: agreement.mismatch });
}
