// One real node: a CNI directory written by netlease's own install-cni (with the loopback
// plugin), a containerd whose CRI reads it, and a kubelet registered under the node's name. A node
// starts as a machine boots: what a previous run left running (shims, mounts, containerd's state)
// is gone, while containerd's root and the kubelet's dir (their records of the pods) are kept.
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { z } from 'zod';
import type { NetworkSchema } from '../worker/agent/install-cni';
import type { CniDir } from './cni-dir';
import { shimsOf, startContainerd, type Containerd } from './containerd';
import { startKubelet, type Kubelet } from './kubelet';
import { unmountUnder } from './mounts';
import { ensureNodeImages, type NodeImage } from './node-images';
import { programPath } from './programs';
import { runToEnd, stopPid, type Tracked } from './processes';

const INSTALL_CNI = join(__dirname, '..', 'worker', 'agent', 'install-cni.js');

export interface RealNodeOptions {
  dir: string;
  nodeName: string;
  kubeconfig: string;
  /** The node's InternalIP, an address of the machine (tools/node-reach); the kubelet serves there. */
  nodeIp?: string;
  /** The netlease network install-cni writes (its node name is the node's). */
  network: Omit<z.input<typeof NetworkSchema>, 'nodeName'>;
  logFd?: number;
  /**
   * netlease runs as pods (tools/in-cluster): the node's CNI dirs are these host directories, where
   * the agent's install-cni writes; the node gets only its runtime's loopback plugin, the images
   * (netlease's among them) and pod namespaces in /var/run/netns, which the agent pod mounts.
   */
  asPods?: { cni: CniDir; images: NodeImage[] };
}

export interface RealNode {
  nodeName: string;
  cni: CniDir;
  /** The conflist containerd's CRI reads. */
  conflist: string;
  /** The containerd now running (a new one after `reboot`). */
  readonly containerd: Containerd;
  /** The kubelet now running (a new one after `startKubelet` or `reboot`). */
  readonly kubelet: Kubelet;
  readonly processes: Tracked[];
  /** Just the kubelet, as a node going down: containerd and the pods' containers keep running. */
  stopKubelet(): Promise<void>;
  /** A kubelet again under the node's name, on the same root dir and containerd. */
  startKubelet(): Promise<void>;
  /** The kubelet, then containerd (a power cut for its containers), then every mount left. */
  stop(): Promise<void>;
  /** `stop()`, then containerd and a kubelet again on the same directory: a node rebooted. */
  reboot(): Promise<void>;
}

/** The runtime's own plugin, as a distribution ships it beside the CNI bin dir's others. */
function linkLoopback(cni: CniDir): void {
  for (const d of Object.values(cni)) mkdirSync(d, { recursive: true });
  const loopback = join(cni.binDir, 'loopback');
  rmSync(loopback, { force: true });
  symlinkSync(programPath('loopback'), loopback);
}

/** `<dir>/cni/{bin,net.d}`: loopback linked, netlease's shim and conflist by install-cni. */
async function installCni(options: RealNodeOptions): Promise<{ cni: CniDir; conflist: string }> {
  if (options.asPods) {
    linkLoopback(options.asPods.cni);
    return { cni: options.asPods.cni, conflist: join(options.asPods.cni.confDir, '10-netlease.conflist') };
  }
  const cni = { binDir: join(options.dir, 'cni', 'bin'), confDir: join(options.dir, 'cni', 'net.d') };
  linkLoopback(cni);
  const config = join(options.dir, 'install-cni.json');
  writeFileSync(
    config,
    JSON.stringify({ ...cni, network: { ...options.network, nodeName: options.nodeName } }),
  );
  const run = await runToEnd(process.execPath, [INSTALL_CNI, '--config', config]);
  if (run.exitCode !== 0) throw new Error(`install-cni failed (exit ${run.exitCode}): ${run.stderr.trim()}`);
  return { cni, conflist: join(cni.confDir, '10-netlease.conflist') };
}

/** containerd on `<dir>/containerd`, then the kubelet on it; containerd stopped if the kubelet fails. */
async function boot(
  options: RealNodeOptions,
  cni: CniDir,
): Promise<{ containerd: Containerd; kubelet: Kubelet }> {
  const containerdDir = join(options.dir, 'containerd');
  mkdirSync(containerdDir, { recursive: true });
  const images = [...ensureNodeImages(), ...(options.asPods?.images ?? [])];
  const containerd = await startContainerd(containerdDir, cni, images, options.logFd, !options.asPods);
  try {
    return { containerd, kubelet: await startKubelet(kubeletOptions(options, containerd)) };
  } catch (err) {
    await containerd.stop();
    throw err;
  }
}

const kubeletOptions = (options: RealNodeOptions, containerd: Containerd) => ({
  dir: options.dir,
  nodeName: options.nodeName,
  kubeconfig: options.kubeconfig,
  containerdSocket: containerd.socket,
  nodeIp: options.nodeIp,
  logFd: options.logFd,
});

export async function startRealNode(options: RealNodeOptions): Promise<RealNode> {
  const { dir } = options;
  // A run that was killed left its shims (they outlive containerd) and mounts: gone first, and
  // containerd's state dir with them (a reboot empties /run).
  for (const pid of shimsOf(join(dir, 'containerd', 'containerd.sock'))) await stopPid(pid);
  await unmountUnder(dir);
  rmSync(join(dir, 'containerd', 'state'), { recursive: true, force: true });
  const { cni, conflist } = await installCni(options);
  let { containerd, kubelet } = await boot(options, cni);
  const stop = async () => {
    await kubelet.stop();
    await containerd.stop();
    await unmountUnder(dir);
  };
  return {
    nodeName: options.nodeName,
    cni,
    conflist,
    get containerd() {
      return containerd;
    },
    get kubelet() {
      return kubelet;
    },
    get processes() {
      return [containerd.process, kubelet.process];
    },
    stopKubelet: () => kubelet.stop(),
    async startKubelet() {
      await kubelet.stop(); // at most one kubelet per root dir
      kubelet = await startKubelet(kubeletOptions(options, containerd));
    },
    stop,
    async reboot() {
      await stop();
      rmSync(join(dir, 'containerd', 'state'), { recursive: true, force: true });
      ({ containerd, kubelet } = await boot(options, cni));
    },
  };
}
