// A contender for a Lease in a process of its own, so a test can SIGKILL a holder:
// `node leadership-contender.js <kubeconfig> <namespace> <name> <identity> <durationSeconds>`.
// Prints `leading` and `stopped` as its leadership changes.
import { connectKube } from '../../kubernetes/kube';
import { holdLeadership } from '../../kubernetes/leadership';

async function main(): Promise<void> {
  const [kubeconfig, namespace, name, identity, duration] = process.argv.slice(2);
  if (!kubeconfig || !namespace || !name || !identity || !duration)
    throw new Error(
      'usage: leadership-contender <kubeconfig> <namespace> <name> <identity> <durationSeconds>',
    );
  const clients = await connectKube(kubeconfig);
  const options = { namespace, name, identity, durationSeconds: Number(duration) };
  holdLeadership(clients, options, {
    lead: () => {
      process.stdout.write('leading\n');
      return () => process.stdout.write('stopped\n');
    },
    error: (err) => process.stderr.write(`${String(err)}\n`),
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
