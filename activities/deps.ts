// What control activities need: a Temporal client and the loaded configuration.
import { ApplicationFailure } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import type { NetleaseConfig, PoolSpec } from '../domain/config';
import { FailureType } from '../domain/lease';
import type { ClusterReader } from '../kubernetes/cluster-reader';

export interface ControlDeps {
  client: Client;
  config: NetleaseConfig;
  /** Present when the config has a `kubernetes` section. */
  reader?: ClusterReader;
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
