// uninstall-cni, the node agent container's preStop: when its DaemonSet is gone or being deleted
// (helm uninstall, kubectl delete), or its service account's access to it is gone (helm removes the
// account and its Role with the DaemonSet), removes netlease's conflist and then the shim from the
// host, so the runtime stops calling a plugin nobody serves. A restart or a rolling update finds the
// DaemonSet there and keeps both: the node's pods keep their network while the agent is replaced
// (ADDs get 11 and are retried by the kubelet, DELs are queued). An API that does not answer keeps
// them too. A removal in error is undone by the next agent pod's install-cni, which writes both.
// Usage: node dist/worker/agent/uninstall-cni.js --daemonset <namespace>/<name> [--bin-dir D] [--conf-dir D] [--conf-name F]
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { connectKube, isNotFound, KubeApiError, kubeCall } from '../../kubernetes/kube';
import { DEFAULTS } from './install-cni';

/**
 * `revoked`: the pod's own service account may no longer read it (401, 403): `helm uninstall`
 * deletes the ServiceAccount and its Role with the DaemonSet, before the pods' preStop runs.
 */
export type DaemonSetState = 'present' | 'deleting' | 'gone' | 'revoked';

export interface UninstallOptions {
  binDir: string;
  confDir: string;
  confName: string;
}

/** Whether the conflist at `path` is netlease's (a plugin of type netlease). */
function isNetleaseConflist(path: string): boolean {
  try {
    const decoded = JSON.parse(readFileSync(path, 'utf8')) as { plugins?: Array<{ type?: unknown }> };
    return decoded.plugins?.some((p) => p.type === 'netlease') === true;
  } catch {
    return false;
  }
}

/** The conflist first (the runtime must never read one naming a missing plugin), then the shim. */
export function uninstall(options: UninstallOptions, log: (line: string) => void): void {
  const conflist = join(options.confDir, options.confName);
  if (existsSync(conflist) && isNetleaseConflist(conflist)) {
    rmSync(conflist);
    log(`removed ${conflist}`);
  } else log(`no netlease conflist at ${conflist}`);
  const shim = join(options.binDir, 'netlease');
  if (existsSync(shim)) {
    rmSync(shim);
    log(`removed ${shim}`);
  } else log(`no shim at ${shim}`);
}

/** The DaemonSet read through the pod's service account (in-cluster), within the call timeout. */
export async function daemonSetState(namespace: string, name: string): Promise<DaemonSetState> {
  const { kube, config, timeouts } = await connectKube();
  const apps = config.makeApiClient(kube.AppsV1Api);
  try {
    const ds = await kubeCall(`reading daemonset ${namespace}/${name}`, timeouts.callSeconds * 1000, (o) =>
      apps.readNamespacedDaemonSet({ namespace, name }, o),
    );
    return ds.metadata?.deletionTimestamp ? 'deleting' : 'present';
  } catch (err) {
    if (isNotFound(err)) return 'gone';
    if (err instanceof KubeApiError && (err.code === 401 || err.code === 403)) return 'revoked';
    throw err;
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      daemonset: { type: 'string' },
      'bin-dir': { type: 'string', default: DEFAULTS.binDir },
      'conf-dir': { type: 'string', default: DEFAULTS.confDir },
      'conf-name': { type: 'string', default: DEFAULTS.confName },
    },
  });
  const [namespace, name, ...rest] = (values.daemonset ?? '').split('/');
  if (!namespace || !name || rest.length) throw new Error('usage: --daemonset <namespace>/<name>');
  const state = await daemonSetState(namespace, name);
  if (state === 'present') {
    console.log(
      `kept the conflist and the shim: daemonset ${namespace}/${name} is there (a restart or an update)`,
    );
    return;
  }
  console.log(`daemonset ${namespace}/${name} is ${state}: removing netlease from this node`);
  uninstall(
    { binDir: values['bin-dir'], confDir: values['conf-dir'], confName: values['conf-name'] },
    console.log,
  );
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(`uninstall-cni: kept the conflist and the shim: ${(err as Error).message}`);
    process.exitCode = 1;
  });
}
