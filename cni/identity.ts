// Who the interface is for: the pod from CNI_ARGS, the node from the config or the host name.
import { leasePodUid } from '../domain/ids';
import { networkMode } from '../domain/conflist';
import type { LeaseStart } from '../domain/lease';
import type { CniEnv } from './env';
import { HostNodeNameError, hostNodeName } from '../kubernetes/node-name';
import { CniCode, CniError } from './errors';
import type { NetConf } from './netconf';

/** Kubernetes runtimes pass K8S_POD_UID (checked by readEnv); without it the container stands in. */
export function podUid(env: CniEnv): string {
  return leasePodUid(env.args.K8S_POD_UID, env.containerId);
}

/** The configured nodeName, else the host's name as the kubelet derives it (error 7 when it is none). */
export function nodeNameOf(conf: NetConf): string {
  if (conf.settings.nodeName) return conf.settings.nodeName;
  try {
    return hostNodeName();
  } catch (err) {
    if (err instanceof HostNodeNameError) throw new CniError(CniCode.invalidNetworkConfig, err.message);
    throw err;
  }
}

/** The ADD's lease, for `pool` (selected: cni/pool-choice). */
export function leaseStart(env: CniEnv, conf: NetConf, pool: string): LeaseStart {
  return {
    podUid: podUid(env),
    podNamespace: env.args.K8S_POD_NAMESPACE ?? '',
    podName: env.args.K8S_POD_NAME ?? '',
    ifName: env.ifName,
    nodeName: nodeNameOf(conf),
    pool,
    mode: networkMode(conf.delegated, conf.settings.mode),
    network: conf.name,
  };
}
