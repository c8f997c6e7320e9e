// Who the interface is for: the pod from CNI_ARGS, the node from the config or the host name.
import { hostname } from 'node:os';
import type { DataplaneMode, LeaseStart } from '../domain/lease';
import type { CniEnv } from './env';
import type { NetConf } from './netconf';

/**
 * Kubernetes runtimes pass K8S_POD_UID (checked by readEnv). Without it (cnitool by hand) the
 * container id stands in, so ADD and DEL of the same container still meet in one lease.
 */
export function podUid(env: CniEnv): string {
  return env.args.K8S_POD_UID || `ctr-${env.containerId.slice(0, 64)}`;
}

export const nodeNameOf = (conf: NetConf): string => conf.settings.nodeName ?? hostname();

export function leaseStart(env: CniEnv, conf: NetConf): LeaseStart {
  const mode: DataplaneMode = conf.delegated ? 'ipam' : (conf.settings.mode ?? 'ipam');
  return {
    podUid: podUid(env),
    podNamespace: env.args.K8S_POD_NAMESPACE ?? '',
    podName: env.args.K8S_POD_NAME ?? '',
    ifName: env.ifName,
    nodeName: nodeNameOf(conf),
    pool: conf.settings.pool,
    mode,
    network: conf.name,
  };
}
