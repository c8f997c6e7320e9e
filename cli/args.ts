// netleasectl's command line: node's parseArgs for the shape, zod for the values. Every error
// names the argument it is about and exits 2.
import { parseArgs } from 'node:util';
import { z } from 'zod';

export class UsageError extends Error {
  override name = 'UsageError';
}

/** A request refused as given (exit 2 too), e.g. a release that needs --yes without a terminal. */
export class Refused extends UsageError {
  override name = 'Refused';
}

/** An operation that did not happen (exit 1), as opposed to a usage error (exit 2). */
export class OperationError extends Error {
  override name = 'OperationError';
}

const OPTIONS = {
  config: { type: 'string' },
  address: { type: 'string' },
  namespace: { type: 'string' },
  'task-queue': { type: 'string' },
  kubeconfig: { type: 'string' },
  ui: { type: 'string' },
  output: { type: 'string', short: 'o' },
  node: { type: 'string' },
  phase: { type: 'string' },
  pod: { type: 'string' },
  all: { type: 'boolean' },
  reason: { type: 'string' },
  at: { type: 'string' },
  history: { type: 'boolean' },
  'node-agent-config': { type: 'string' },
  yes: { type: 'boolean', short: 'y' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type OptionName = keyof typeof OPTIONS;
export type Values = Partial<Record<OptionName, string | boolean>>;

export interface CommandLine {
  command: string;
  positionals: string[];
  values: Values;
}

export function parseCommandLine(argv: string[]): CommandLine {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const [command = '', ...positionals] = parsed.positionals;
  return { command, positionals, values: parsed.values as Values };
}

/** Validates `value` with `schema`; the error names the argument (`--phase`, `<lease>`). */
export function argument<T>(schema: z.ZodType<T>, value: unknown, name: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  throw new UsageError(
    `${name}: ${issue?.message ?? 'invalid'}${value === undefined ? '' : ` (got ${JSON.stringify(value)})`}`,
  );
}

/** Only the options a command takes (besides the connection and output ones) are accepted. */
const COMMON: OptionName[] = [
  'config',
  'address',
  'namespace',
  'task-queue',
  'kubeconfig',
  'ui',
  'output',
  'help',
];

export function onlyOptions(line: CommandLine, allowed: OptionName[]): void {
  for (const name of Object.keys(line.values) as OptionName[]) {
    if (!COMMON.includes(name) && !allowed.includes(name))
      throw new UsageError(`--${name}: not an option of "${line.command}"`);
  }
}

/** Exactly `count` positional arguments, named for the error. */
export function positionals(line: CommandLine, names: string[]): string[] {
  if (line.positionals.length < names.length)
    throw new UsageError(`${names[line.positionals.length]}: missing`);
  if (line.positionals.length > names.length)
    throw new UsageError(`unexpected argument ${JSON.stringify(line.positionals[names.length])}`);
  return line.positionals;
}

export const OutputSchema = z.enum(['table', 'json']).default('table');
export type Output = z.infer<typeof OutputSchema>;
