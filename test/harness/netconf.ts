// Network configurations the way a runtime would hand them to the shim.
import { cniPaths, temporalAddress } from './temporal';

export interface NetconfOptions {
  taskQueue: string;
  nodeName: string;
  pool?: string;
  cniVersion?: string;
  extra?: Record<string, unknown>;
}

export function netconf(options: NetconfOptions): Record<string, unknown> {
  return {
    cniVersion: options.cniVersion ?? '1.1.0',
    name: 'netlease-test',
    type: 'netlease',
    pool: options.pool ?? options.taskQueue, // each test file has its own pool (see testConfig)
    nodeName: options.nodeName,
    temporal: { address: temporalAddress(), taskQueue: options.taskQueue },
    timeoutSeconds: 60,
    agentSocket: cniPaths(options.taskQueue).socket,
    deleteQueue: cniPaths(options.taskQueue).deleteQueue,
    ...options.extra,
  };
}
