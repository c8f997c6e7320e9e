// What control activities need: a Temporal client and the loaded configuration.
import { ApplicationFailure } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import type { NetleaseConfig, PoolSpec } from '../domain/config';
import { FailureType } from '../domain/lease';
import type { ClusterReader } from '../kubernetes/cluster-reader';
import type { StatefulSetReader } from '../kubernetes/statefulsets';

export interface ControlDeps {
  client: Client;
  config: NetleaseConfig;
  /** Present when the config has a `kubernetes` section. */
  reader?: ClusterReader;
  /** With `reader`: the reconciler ends the sticky reservations of deleted StatefulSets. */
  statefulSets?: StatefulSetReader;
}

export function poolSpec(config: NetleaseConfig, name: string): PoolSpec {
  const spec = config.pools.find((p) => p.name === name);
  if (!spec) {
    const known = config.pools.map((p) => p.name).join(', ');
    throw ApplicationFailure.nonRetryable(
      `unknown pool "${name}" (configured: ${known})`,
      FailureType.invalidConfig,
    );
  }
  return spec;
}
