// Who the interface is for: the pod from CNI_ARGS, the node from the config or the host name.
import { hostname } from 'node:os';
import type { DataplaneMode, LeaseStart } from '../domain/lease';
import type { CniEnv } from './env';
import { CniCode, CniError } from './errors';
import type { NetConf } from './netconf';

const UID = /^[A-Za-z0-9][A-Za-z0-9-]{0,127}$/;

/**
 * Kubernetes runtimes pass K8S_POD_UID. Without it (cnitool by hand) the container id stands in,
 * so ADD and DEL of the same container still meet in one lease.
 */
export function podUid(env: CniEnv): string {
  const uid = env.args.K8S_POD_UID;
  if (uid === undefined || uid === '') return `ctr-${env.containerId.slice(0, 64)}`;
  if (!UID.test(uid)) throw new CniError(CniCode.invalidEnv, `invalid CNI_ARGS K8S_POD_UID "${uid}"`);
  return uid;
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
