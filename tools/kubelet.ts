// A real kubelet for one node of the local cluster: its own root dir and ports, serving on the
// node's IP (tools/node-reach: an address of the machine that pods have no route to), talking CRI to the node's containerd, registered under the node's name. Settings for
// this machine (cgroup v1 without systemd, root without CAP_SYS_RESOURCE, swap allowed): no QoS
// cgroups, no node-allocatable enforcement, no cloud.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { unmountUnder } from './mounts';
import { programPath } from './programs';
import { freePort, startTracked, stopPid, type Tracked } from './processes';

export interface KubeletOptions {
  dir: string;
  nodeName: string;
  /** A kubeconfig with rights on Nodes and Pods (the dev cluster's admin token). */
  kubeconfig: string;
  containerdSocket: string;
  /** The node's InternalIP, where the kubelet serves (the apiserver's exec, logs); else loopback. */
  nodeIp?: string;
  logFd?: number;
}

export interface Kubelet {
  process: Tracked;
  rootDir: string;
  /** Stops the kubelet (its pods keep running, as on a real node) and unmounts its root dir. */
  stop(): Promise<void>;
}

async function kubeletConfig(options: KubeletOptions): Promise<object> {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: options.nodeIp ?? '127.0.0.1',
    port: await freePort(),
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: await freePort(),
    // The apiserver has no kubelet client certificate; only the machine reaches the node's IP.
    authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
    authorization: { mode: 'AlwaysAllow' },
    containerRuntimeEndpoint: `unix://${options.containerdSocket}`,
    podLogsDir: join(options.dir, 'pod-logs'),
    // A dev node keeps its two images: they cannot be pulled again.
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    evictionHard: { 'memory.available': '100Mi' },
    registerNode: true,
    rotateCertificates: false,
    serializeImagePulls: false,
    syncFrequency: '10s',
    fileCheckFrequency: '10s',
    volumeStatsAggPeriod: '0s',
    resolvConf: '/etc/resolv.conf',
  };
}

export async function startKubelet(options: KubeletOptions): Promise<Kubelet> {
  const rootDir = join(options.dir, 'kubelet');
  mkdirSync(join(options.dir, 'pod-logs'), { recursive: true });
  mkdirSync(rootDir, { recursive: true });
  const configFile = join(options.dir, 'kubelet.json');
  writeFileSync(configFile, JSON.stringify(await kubeletConfig(options), null, 2));
  const out = options.logFd ?? 'ignore';
  const kubelet = startTracked(
    programPath('kubelet'),
    [
      `--config=${configFile}`,
      `--kubeconfig=${options.kubeconfig}`,
      `--root-dir=${rootDir}`,
      `--cert-dir=${join(rootDir, 'pki')}`,
      `--hostname-override=${options.nodeName}`,
      ...(options.nodeIp ? [`--node-ip=${options.nodeIp}`] : []),
      // This cgroup v1 host has no systemd; QoS cgroups and allocatable enforcement need cgroup
      // settings root cannot make here; swap may be on.
      '--cgroup-driver=cgroupfs',
      '--cgroups-per-qos=false',
      '--enforce-node-allocatable=',
      '--fail-swap-on=false',
      '--v=1',
    ],
    { stdio: ['ignore', out, out] },
  );
  return {
    process: kubelet,
    rootDir,
    async stop() {
      await stopPid(kubelet.pid);
      await unmountUnder(rootDir);
    },
  };
}
