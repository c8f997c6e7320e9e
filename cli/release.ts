// `netleasectl release <lease> --reason R [--yes]`: releases a lease. A lease whose pod exists
// (quorum read by UID; unknown without a kubeconfig) is released only after a y/N answer on a
// terminal or with --yes; without a terminal and without --yes it refuses.
import { createInterface } from 'node:readline/promises';
import { z } from 'zod';
import { signalRelease } from '../temporal/signals';
import { argument, OperationError, onlyOptions, positionals, Refused, type CommandLine } from './args';
import type { Context, Run } from './context';
import { emit } from './output';
import { resolveLease, LeaseRefSchema } from './resolve';
import type { LeaseExecution } from '../temporal/visibility';

const ReasonSchema = z
  .string({ message: 'required (why the lease is released)' })
  .trim()
  .min(1, 'must not be empty')
  .max(500);

/** Whether the lease's pod exists by UID: 'yes', 'no', or 'unknown' without Kubernetes. */
async function podExists(context: Context, lease: LeaseExecution): Promise<'yes' | 'no' | 'unknown'> {
  const cluster = await context.cluster();
  if (!cluster) return 'unknown';
  const [namespace, name] = lease.podRef.split('/');
  if (namespace && name) {
    const pod = await cluster.readPod(namespace, name);
    return pod?.uid === lease.podUid ? 'yes' : 'no';
  }
  return (await cluster.listPods()).some((p) => p.uid === lease.podUid) ? 'yes' : 'no';
}

async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

export function releaseCommand(line: CommandLine): Run {
  onlyOptions(line, ['reason', 'yes']);
  const ref = argument(LeaseRefSchema, positionals(line, ['<lease>'])[0], '<lease>');
  const reason = argument(ReasonSchema, line.values.reason, '--reason');
  const yes = line.values.yes === true;
  return async (context: Context) => {
    const lease = await resolveLease(context, ref);
    if (!lease.open)
      throw new OperationError(
        `${lease.workflowId} is already ${lease.phase || 'closed'}: nothing to release`,
      );
    const exists = await podExists(context, lease);
    if (exists !== 'no' && !yes) {
      const what =
        exists === 'yes'
          ? `pod ${lease.podRef} (uid ${lease.podUid}) exists`
          : `cannot tell whether pod ${lease.podRef} (uid ${lease.podUid}) exists (no kubeconfig)`;
      if (!process.stdin.isTTY)
        throw new Refused(
          `${what}: refusing to release ${lease.workflowId} without a terminal to ask on; pass --yes to release it anyway`,
        );
      if (
        !(await confirm(
          `${what}; releasing ${lease.workflowId} takes its addresses away from it. Release? [y/N] `,
        ))
      ) {
        process.stderr.write('not released\n');
        return 1;
      }
    }
    // The run resolved (and confirmed open) above, not whatever run the id has by now.
    if (!(await signalRelease(context.client, lease.workflowId, `netleasectl: ${reason}`, lease.runId)))
      throw new OperationError(`${lease.workflowId} closed before the release signal reached it`);
    emit(
      context.output,
      { workflowId: lease.workflowId, signalled: 'release', reason, podExists: exists },
      () =>
        `release sent to ${lease.workflowId} (reason "netleasectl: ${reason}"); the lease deactivates and returns ${lease.addresses.join(', ') || 'its addresses'}\n`,
    );
    return 0;
  };
}
