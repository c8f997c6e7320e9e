// A client like the control worker's that also records every failed gRPC status it receives, so
// a test can tell that the server refused nothing (the client's retries would otherwise hide it),
// and counts the calls it makes by method (SignalWorkflowExecution, ListWorkflowExecutions...),
// so a test can tell what a piece of work cost Temporal.
import { InterceptingCall } from '@grpc/grpc-js'; // the SDK's own gRPC library (its interceptors' type)
import {
  Client,
  Connection,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
  type ConnectionOptions,
  type GrpcRetryOptions,
} from '@temporalio/client';
import { temporalAddress } from './temporal';

type Status = Parameters<GrpcRetryOptions['retryableDecider']>[1];
type Interceptor = NonNullable<ConnectionOptions['interceptors']>[number];

export interface CountingClient {
  client: Client;
  failures: Status[];
  /** Calls made, by gRPC method name; retries of one call count once. */
  calls: Map<string, number>;
}

export async function countingClient(): Promise<CountingClient> {
  const failures: Status[] = [];
  const calls = new Map<string, number>();
  const retry = defaultGrpcRetryOptions();
  const count: Interceptor = (options, nextCall) => {
    const method = options.method_definition.path.split('/').at(-1) ?? '';
    calls.set(method, (calls.get(method) ?? 0) + 1);
    return new InterceptingCall(nextCall(options));
  };
  const connection = await Connection.connect({
    address: temporalAddress(),
    interceptors: [
      count, // outermost: sees each call once, before the retries
      makeGrpcRetryInterceptor({
        delayFunction: retry.delayFunction,
        retryableDecider: (attempt, status) => {
          if (status.code !== 0) failures.push(status);
          return retry.retryableDecider(attempt, status);
        },
      }),
    ],
  });
  return { client: new Client({ connection }), failures, calls };
}

/** The failures that are the server refusing or aborting an update (its in-flight limit). */
export const rejections = (failures: Status[]): Status[] =>
  failures.filter(
    (s) => /in-flight updates|update was aborted|resource ?exhausted/i.test(s.details) || s.code === 8,
  );
