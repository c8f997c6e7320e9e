// Updates and workflows fail only with ApplicationFailure; activity failures are unwrapped so the
// root cause's type (PoolExhausted, InvalidConfig, ...) reaches the CNI shim intact.
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';

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
