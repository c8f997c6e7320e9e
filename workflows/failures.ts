// Updates and workflows fail only with ApplicationFailure; activity failures are unwrapped so the
// root cause's type (PoolExhausted, InvalidConfig, ...) reaches the CNI shim intact.
import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/workflow';

export function toApplicationFailure(err: unknown, fallbackType: string): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure) {
    const cause = err.cause;
    return ApplicationFailure.create({
      message: cause.message,
      type: cause.type ?? fallbackType,
      nonRetryable: true,
    });
  }
  const message = err instanceof Error ? describe(err) : String(err);
  return ApplicationFailure.create({ message, type: fallbackType, nonRetryable: true });
}

export function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
  }
  return String(err);
}

/**
 * The cause an operator can act on, for the lease's current details: the innermost failure's
 * message (not the SDK's "Activity task failed" wrapper); a timeout says so and keeps the last
 * failure it cut short. No trailing period, so it can start a sentence of its own.
 */
export function causeOf(err: unknown): string {
  const chain: Error[] = [];
  for (let e: unknown = err; e instanceof Error && chain.length < 8; e = (e as { cause?: unknown }).cause) {
    chain.push(e);
  }
  const told = chain.filter((e) => !(e instanceof ActivityFailure) && e.message.length > 0);
  const root = told[told.length - 1];
  if (!root) return describe(err).replace(/\.$/, '');
  const timeout = told.find((e) => e instanceof TimeoutFailure);
  const text =
    timeout && timeout !== root ? `${timeout.message} (last failure: ${root.message})` : root.message;
  return text.replace(/\.$/, '');
}
