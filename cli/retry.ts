// `netleasectl retry <lease>`: sends `retry` to a parked (ActivationFailed) lease; says so and
// exits 1 when the lease is not parked.
import { signalRetry } from '../temporal/signals';
import { argument, OperationError, onlyOptions, positionals, type CommandLine } from './args';
import type { Context, Run } from './context';
import { emit } from './output';
import { leaseState, resolveLease, LeaseRefSchema } from './resolve';

export function retryCommand(line: CommandLine): Run {
  onlyOptions(line, []);
  const ref = argument(LeaseRefSchema, positionals(line, ['<lease>'])[0], '<lease>');
  return async (context: Context) => {
    const lease = await resolveLease(context, ref);
    const state = lease.open ? await leaseState(context, lease) : undefined;
    const parked = state?.attachments.filter((a) => a.status === 'parked') ?? [];
    if (!lease.open || !parked.length)
      throw new OperationError(
        `${lease.workflowId} is ${state?.phase ?? lease.phase}${lease.open ? '' : ' (closed)'}, not parked in ActivationFailed: nothing to retry`,
      );
    if (!(await signalRetry(context.client, lease.workflowId)))
      throw new OperationError(`${lease.workflowId} closed before the retry signal reached it`);
    emit(
      context.output,
      { workflowId: lease.workflowId, signalled: 'retry', parked: parked.map((a) => a.containerId) },
      () =>
        `retry sent to ${lease.workflowId}: ${parked.length} parked attachment(s) activate again (${parked.map((a) => a.containerId).join(', ')})\n`,
    );
    return 0;
  };
}
