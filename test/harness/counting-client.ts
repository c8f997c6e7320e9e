// A client like the control worker's that also records every failed gRPC status it receives, so
// a test can tell that the server refused nothing (the client's retries would otherwise hide it).
import {
  Client,
  Connection,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
  type GrpcRetryOptions,
} from '@temporalio/client';
import { temporalAddress } from './temporal';

type Status = Parameters<GrpcRetryOptions['retryableDecider']>[1];

export async function countingClient(): Promise<{ client: Client; failures: Status[] }> {
  const failures: Status[] = [];
  const retry = defaultGrpcRetryOptions();
  const connection = await Connection.connect({
    address: temporalAddress(),
    interceptors: [
      makeGrpcRetryInterceptor({
        delayFunction: retry.delayFunction,
        retryableDecider: (attempt, status) => {
          if (status.code !== 0) failures.push(status);
          return retry.retryableDecider(attempt, status);
        },
      }),
    ],
  });
  return { client: new Client({ connection }), failures };
}

/** The failures that are the server refusing or aborting an update (its in-flight limit). */
export const rejections = (failures: Status[]): Status[] =>
  failures.filter(
    (s) => /in-flight updates|update was aborted|resource ?exhausted/i.test(s.details) || s.code === 8,
  );
