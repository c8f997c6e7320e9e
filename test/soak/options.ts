// What a soak run is asked to do (`npm run soak -- --seed 7 --lifecycles 10000 ...`).
import { z } from 'zod';

export const FAULT_KINDS = [
  'kill-control',
  'kill-agent',
  'kill-agent-mid-activation',
  'restart-temporal',
  'restart-kube',
  'temporal-unreachable',
  'node-replaced',
  'node-deleted',
  'damage-agent-files',
  // The Node object deleted and registered again (a new UID) with its pods kept: on the same
  // machine, or on a new one whose kubelet runs them again.
  'node-reregistered',
  'node-moved',
  'sigstop-control',
  'sigstop-agent',
  'cut-agent-temporal',
  'cut-control-kube',
  'pause-offer-written',
  'pause-offer-revoked',
  'pause-compensation',
  'pause-continue-as-new',
  // An operator's actions from the Temporal CLI.
  'operator-terminate',
  'operator-reset',
  'operator-signals',
  'operator-cancel',
  'pool-config-change',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export const SoakOptionsSchema = z
  .object({
    seed: z.coerce
      .number()
      .int()
      .min(0)
      .default(() => Math.floor(Math.random() * 2 ** 31)),
    /** Lifecycles to complete; the run also ends at `minutes`. */
    lifecycles: z.coerce.number().int().min(1).default(300),
    nodes: z.coerce.number().int().min(2).max(16).default(4),
    minutes: z.coerce.number().positive().default(3),
    /**
     * Go on past `minutes` (up to three times as long) until every fault kind was injected once:
     * on a busy machine convergence is slower and fewer faults fit.
     */
    everyFault: z
      .union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')])
      .default(false),
    /**
     * Go on past `minutes` (up to three times as long) until this many lifecycles completed: a
     * busy machine completes fewer in the time, and the run is judged on a workload this size.
     */
    atLeast: z.coerce.number().int().min(0).default(0),
    /** Pods in flight at once. */
    inFlight: z.coerce.number().int().min(1).max(64).default(12),
    /** The share of faults injected as a pair, the second while the first is under way. */
    overlap: z.coerce.number().min(0).max(1).default(0.3),
    /** Seconds between faults (each at a random moment in such a window). */
    faultEverySeconds: z.coerce.number().positive().default(8),
    faults: z
      .union([z.string(), z.array(z.enum(FAULT_KINDS))])
      .transform((v) => (typeof v === 'string' ? (v === 'none' ? [] : v.split(',')) : v))
      .pipe(z.array(z.enum(FAULT_KINDS)))
      .default([...FAULT_KINDS]),
    /** Where the stack keeps its state and logs (kept after a failed run). */
    dir: z.string().optional(),
  })
  .strict();
export type SoakOptions = z.infer<typeof SoakOptionsSchema>;

/** `--name value` / `--name=value` pairs into an object; a flag without a value is an error. */
export function parseArgs(argv: string[]): Record<string, string> {
  const parsed: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const match = /^--([a-zA-Z-]+)(?:=(.*))?$/.exec(arg);
    if (!match?.[1]) throw new Error(`unexpected argument "${arg}" (flags are --name value)`);
    const name = match[1].replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    const value = match[2] ?? argv[++i];
    if (value === undefined) throw new Error(`--${match[1]} needs a value`);
    parsed[name] = value;
  }
  return parsed;
}
