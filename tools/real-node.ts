// One real node: a CNI directory written by netlease's own install-cni (with the loopback
// plugin), a containerd whose CRI reads it, and a kubelet registered under the node's name. A node
// starts fresh: what a previous run left in its directory (mounts, containers) is removed first.
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { z } from 'zod';
import type { NetworkSchema } from '../worker/agent/install-cni';
import type { CniDir } from './cni-dir';
import { shimsOf, startContainerd, type Containerd } from './containerd';
import { startKubelet, type Kubelet } from './kubelet';
import { unmountUnder } from './mounts';
import { ensureNodeImages } from './node-images';
import { programPath } from './programs';
import { runToEnd, stopPid, type Tracked } from './processes';

const INSTALL_CNI = join(__dirname, '..', 'worker', 'agent', 'install-cni.js');

export interface RealNodeOptions {
  dir: string;
  nodeName: string;
  kubeconfig: string;
  /** The netlease network install-cni writes (its node name is the node's). */
  network: Omit<z.input<typeof NetworkSchema>, 'nodeName'>;
  logFd?: number;
}

export interface RealNode {
  nodeName: string;
  cni: CniDir;
  /** The conflist containerd's CRI reads. */
  conflist: string;
  containerd: Containerd;
  /** The kubelet now running (a new one after `startKubelet`). */
  readonly kubelet: Kubelet;
  processes: Tracked[];
  /** Just the kubelet, as a node going down: containerd and the pods' containers keep running. */
  stopKubelet(): Promise<void>;
  /** A kubelet again under the node's name, on the same root dir and containerd. */
  startKubelet(): Promise<void>;
  /** The kubelet, then containerd (its containers and namespaces), then every mount left. */
  stop(): Promise<void>;
}

/** `<dir>/cni/{bin,net.d}`: loopback linked, netlease's shim and conflist by install-cni. */
async function installCni(options: RealNodeOptions): Promise<{ cni: CniDir; conflist: string }> {
  const cni = { binDir: join(options.dir, 'cni', 'bin'), confDir: join(options.dir, 'cni', 'net.d') };
  for (const d of Object.values(cni)) mkdirSync(d, { recursive: true });
  const loopback = join(cni.binDir, 'loopback');
  rmSync(loopback, { force: true });
  symlinkSync(programPath('loopback'), loopback);
  const config = join(options.dir, 'install-cni.json');
  writeFileSync(
    config,
    JSON.stringify({ ...cni, network: { ...options.network, nodeName: options.nodeName } }),
  );
  const run = await runToEnd(process.execPath, [INSTALL_CNI, '--config', config]);
  if (run.exitCode !== 0) throw new Error(`install-cni failed (exit ${run.exitCode}): ${run.stderr.trim()}`);
  return { cni, conflist: join(cni.confDir, '10-netlease.conflist') };
}

export async function startRealNode(options: RealNodeOptions): Promise<RealNode> {
  const { dir } = options;
  // A run that was killed left its shims (they outlive containerd) and mounts: gone first.
  for (const pid of shimsOf(join(dir, 'containerd', 'containerd.sock'))) await stopPid(pid);
  await unmountUnder(dir);
  for (const sub of ['containerd', 'kubelet']) rmSync(join(dir, sub), { recursive: true, force: true });
  const { cni, conflist } = await installCni(options);
  const containerdDir = join(dir, 'containerd');
  mkdirSync(containerdDir, { recursive: true });
  const containerd = await startContainerd(containerdDir, cni, ensureNodeImages(), options.logFd);
  const kubeletOptions = {
    dir,
    nodeName: options.nodeName,
    kubeconfig: options.kubeconfig,
    containerdSocket: containerd.socket,
    logFd: options.logFd,
  };
  let kubelet: Kubelet;
  try {
    kubelet = await startKubelet(kubeletOptions);
  } catch (err) {
    await containerd.stop();
    throw err;
  }
  return {
    nodeName: options.nodeName,
    cni,
    conflist,
    containerd,
    get kubelet() {
      return kubelet;
    },
    processes: [containerd.process, kubelet.process],
    stopKubelet: () => kubelet.stop(),
    async startKubelet() {
      await kubelet.stop(); // at most one kubelet per root dir
      kubelet = await startKubelet(kubeletOptions);
    },
    async stop() {
      await kubelet.stop();
      await containerd.stop();
      await unmountUnder(dir);
    },
  };
}
