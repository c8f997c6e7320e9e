// `netleasectl lease <pod | ip | workflow id>`: the whole state, the attachments, and the phases
// the lease went through (its LeasePhase upserts, with their event times).
import { leasePhaseHistory } from '../temporal/histories';
import { FAILING_TASK_REMEDY, failingWorkflowTask } from '../temporal/workflow-task';
import { argument, onlyOptions, positionals, type CommandLine } from './args';
import { uiLink, type Context, type Run } from './context';
import { emit, fields, table, time } from './output';
import { leaseState, resolveLease, LeaseRefSchema } from './resolve';

export function leaseCommand(line: CommandLine): Run {
  onlyOptions(line, []);
  const ref = argument(LeaseRefSchema, positionals(line, ['<lease>'])[0], '<lease>');
  return async (context: Context) => {
    const lease = await resolveLease(context, ref);
    const phases = await leasePhaseHistory(context.client, lease.workflowId, lease.runId);
    const task = lease.open
      ? await failingWorkflowTask(context.client, lease.workflowId, lease.runId)
      : undefined;
    // A failing task cannot answer the state query either: the visibility row is what there is.
    const state = task ? undefined : await leaseState(context, lease);
    const value = {
      workflowId: lease.workflowId,
      runId: lease.runId,
      open: lease.open,
      started: time(lease.startTime),
      closed: time(lease.closeTime),
      ui: uiLink(context, lease.workflowId),
      failingWorkflowTask: task ?? null,
      state,
      phases: phases.map((p) => ({ phase: p.phase, at: time(p.at), addresses: p.addresses })),
    };
    emit(context.output, value, () => {
      const start = state?.start;
      const header = fields([
        ['Lease', lease.workflowId],
        ['Run', `${lease.runId}${lease.open ? '' : ' (closed)'}`],
        ['Pod', `${lease.podRef} (uid ${lease.podUid})`],
        ['Interface', lease.ifName],
        ['Node', lease.nodeName],
        ['Pool', start?.pool],
        ['Mode', start?.mode],
        ['Phase', state?.phase ?? lease.phase],
        [
          'Addresses',
          (state?.addresses ?? [])
            .map((a) => `${a.address}/${a.prefixLength}${a.gateway ? ` gw ${a.gateway}` : ''}`)
            .join(', '),
        ],
        ['Last error', state?.lastError],
        ['Release reason', state?.releaseReason],
        [
          'Workflow task',
          task
            ? `FAILING (${task.attempt - 1} failure(s)): ${task.failure}; the lease does not move. Remedy: ${FAILING_TASK_REMEDY}`
            : lease.open
              ? 'ok'
              : undefined,
        ],
        ['Started', time(lease.startTime)],
        ['Closed', time(lease.closeTime)],
        ['UI', value.ui],
      ]);
      const attachments = table(
        ['CONTAINER', 'IF', 'NETNS', 'STATUS', 'HOST LINK', 'POD LINK'],
        (state?.attachments ?? []).map((a) => [
          a.containerId,
          a.ifName,
          a.netns,
          a.status,
          a.links ? `${a.links.host.name} ${a.links.host.mac}` : '',
          a.links ? `${a.links.container.name} ${a.links.container.mac}` : '',
        ]),
      );
      const history = table(
        ['TIME', 'PHASE', 'ADDRESSES'],
        phases.map((p) => [time(p.at), p.phase, p.addresses.join(',')]),
      );
      return `${header}\nAttachments:\n${attachments}\nPhase history:\n${history}`;
    });
    return 0;
  };
}
