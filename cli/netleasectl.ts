#!/usr/bin/env node
// netleasectl: the operator's console. Reads leases, nodes and pools from Temporal (and pods and
// nodes from Kubernetes for `check` and `release`); changes something only on `retry` and
// `release`. Exit codes: 0 ok, 1 a problem found or an operation failed, 2 a usage error.
import { ConfigError } from '../domain/config';
import { OperationError, parseCommandLine, Refused, UsageError, type CommandLine } from './args';
import { checkCommand } from './check';
import { connect, type Context, type Run } from './context';
import { ipCommand } from './ip';
import { leaseCommand } from './lease';
import { leasesCommand } from './leases';
import { nodesCommand, poolsCommand } from './nodes';
import { releaseCommand } from './release';
import { retryCommand } from './retry';

export const COMMANDS: Record<string, (line: CommandLine) => Run> = {
  leases: leasesCommand,
  lease: leaseCommand,
  ip: ipCommand,
  nodes: nodesCommand,
  pools: poolsCommand,
  check: checkCommand,
  retry: retryCommand,
  release: releaseCommand,
};

export const USAGE = `usage: netleasectl <command> [options]

commands:
  leases [--node N] [--phase P] [--pod ns/name] [--all]   one row a lease (open ones; --all: closed too)
  lease <pod ns/name | pod uid | ip | workflow id>        a lease's state, attachments, phase history
  ip <address> [--at T | --history]                      who holds an address now, held it at T, held it ever
  nodes                                                   incarnations and blocks per node
  pools                                                   blocks and used/free/cooling per pool
  check [--node-agent-config F]                           consistency check; exit 1 on a problem
                                                          (F: a node agent's preProduce vs its conflist)
  retry <lease>                                           runs a parked activation again
  release <lease> --reason R [--yes]                      releases a lease (asks if its pod exists)

options:
  --config <file>      control config (temporal, kubernetes.kubeconfig); env NETLEASE_CONFIG
  --address host:port  Temporal frontend (default 127.0.0.1:7233)
  --namespace NS       Temporal namespace (default "default")
  --task-queue TQ      the control plane's task queue (default netlease-control)
  --kubeconfig FILE    Kubernetes, for check and release
  --ui URL             Temporal UI base for links; env NETLEASE_UI (default http://127.0.0.1:8233)
  -o, --output FMT     table (default) or json
`;

export async function main(argv: string[]): Promise<number> {
  let line: CommandLine;
  try {
    line = parseCommandLine(argv);
    if (line.values.help || line.command === 'help') {
      process.stdout.write(USAGE);
      return 0;
    }
    if (!line.command) throw new UsageError('<command>: missing');
    if (!COMMANDS[line.command]) throw new UsageError(`<command>: unknown command "${line.command}"`);
  } catch (err) {
    return fail(err);
  }
  let context: Context | undefined;
  try {
    const run = (COMMANDS[line.command] as (line: CommandLine) => Run)(line);
    context = await connect(line);
    return await run(context);
  } catch (err) {
    return fail(err);
  } finally {
    await context?.close().catch(() => undefined);
  }
}

function fail(err: unknown): number {
  if (err instanceof UsageError || err instanceof ConfigError) {
    process.stderr.write(
      `netleasectl: ${err.message}\n${err instanceof UsageError && !(err instanceof Refused) ? 'run "netleasectl --help" for usage\n' : ''}`,
    );
    return 2;
  }
  process.stderr.write(
    `netleasectl: ${err instanceof OperationError ? '' : 'error: '}${(err as Error).message ?? String(err)}\n`,
  );
  return 1;
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
