// `netleasectl leases [--node N] [--phase P] [--pod ns/name] [--all]`: one row a lease.
import { z } from 'zod';
import { LEASE_PHASES } from '../domain/lease';
import { leaseExecutions } from '../temporal/visibility';
import { argument, onlyOptions, positionals, type CommandLine } from './args';
import { uiLink, type Context, type Run } from './context';
import { age, emit, table, time } from './output';
import { mapLimited } from '../domain/map-limited';
import { leaseState } from './resolve';

const Filters = z.object({
  node: z.string().min(1).max(253).optional(),
  phase: z.enum(LEASE_PHASES).optional(),
  pod: z
    .string()
    .regex(/^[^/]+\/[^/]+$/, 'must be namespace/name')
    .optional(),
  all: z.boolean().default(false),
});

export function leasesCommand(line: CommandLine): Run {
  onlyOptions(line, ['node', 'phase', 'pod', 'all']);
  positionals(line, []);
  const node = argument(Filters.shape.node, line.values.node, '--node');
  const phase = argument(Filters.shape.phase, line.values.phase, '--phase');
  const pod = argument(Filters.shape.pod, line.values.pod, '--pod');
  const all = argument(Filters.shape.all, line.values.all, '--all');
  return async (context: Context) => {
    // Released leases are closed workflows: asking for them (or --all) lists closed runs too.
    const open = all || phase === 'Released' ? undefined : true;
    const executions = await leaseExecutions(context.client, context.taskQueue, {
      ...(open === undefined ? {} : { open }),
      ...(node ? { NodeName: node } : {}),
      ...(phase ? { LeasePhase: phase } : {}),
      ...(pod ? { PodRef: pod } : {}),
    });
    executions.sort((x, y) => x.podRef.localeCompare(y.podRef) || x.ifName.localeCompare(y.ifName));
    const states = await mapLimited(executions, 16, (e) => leaseState(context, e));
    const rows = executions.map((e, i) => ({
      workflowId: e.workflowId,
      runId: e.runId,
      pod: e.podRef,
      podUid: e.podUid,
      ifName: e.ifName,
      node: e.nodeName,
      phase: states[i]?.phase ?? e.phase,
      addresses: states[i]?.addresses.map((a) => a.address) ?? e.addresses,
      open: e.open,
      started: time(e.startTime),
      closed: time(e.closeTime),
      lastError: states[i]?.lastError ?? '',
      ui: uiLink(context, e.workflowId),
    }));
    emit(context.output, rows, () =>
      table(
        ['POD', 'IF', 'NODE', 'PHASE', 'ADDRESSES', 'AGE', 'LAST ERROR', 'UI'],
        rows.map((r, i) => [
          r.pod,
          r.ifName,
          r.node,
          r.phase,
          r.addresses.join(','),
          age(executions[i]?.startTime ?? new Date()),
          r.lastError.length > 60 ? `${r.lastError.slice(0, 57)}...` : r.lastError,
          r.ui,
        ]),
      ),
    );
    return 0;
  };
}
