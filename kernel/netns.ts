// Network namespaces as the runtime names them: a path that must exist before we can use it.
import { stat } from 'node:fs/promises';
import { ApplicationFailure } from '@temporalio/common';
import { DataplaneFailure } from '../domain/dataplane';
import { netnsPath } from './ip';

export async function netnsExists(path: string): Promise<boolean> {
  return stat(netnsPath(path)).then(
    () => true,
    () => false,
  );
}

/** Missing is retryable: the runtime may still be creating it (seed 003). */
export async function requireNetns(path: string): Promise<void> {
  if (!(await netnsExists(path))) {
    throw ApplicationFailure.retryable(
      `network namespace ${path} does not exist (yet)`,
      DataplaneFailure.netnsMissing,
    );
  }
}
