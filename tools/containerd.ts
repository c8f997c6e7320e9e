// One containerd per real node (Debian's package), with its own root, state and socket, so two
// nodes on one machine never share containers, images or shims. Its CRI plugin calls the CNI
// plugins of the node's CNI directory; the images come from tools/node-images (no registry).
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { PAUSE_IMAGE, type NodeImage } from './node-images';
import { cmdlineOf, runToEnd, startTracked, stopPid, waitFor, type Tracked } from './processes';
import type { CniDir } from './cni-dir';

export interface Containerd {
  socket: string;
  process: Tracked;
  /** `ctr --address <socket> -n k8s.io <args>`: its stdout; throws naming the command on failure. */
  ctr(args: string[]): Promise<string>;
  /**
   * A power cut: kills every task (the shims then exit), stops containerd and removes the network
   * namespaces its sandboxes had, as a reboot empties /run. The containers' records stay in its
   * root, so a containerd started again on the same directory knows the dead sandboxes and the
   * kubelet tears each down with a CNI DEL, as after a real reboot.
   */
  stop(): Promise<void>;
}

/** The CRI's config (containerd 1.6, config version 2). */
function config(dir: string, socket: string, cni: CniDir, netnsUnderState: boolean): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `version = 2
root = "${join(dir, 'root')}"
state = "${join(dir, 'state')}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "${socket}"
[ttrpc]
  address = "${socket}.ttrpc"
[debug]
  level = "warn"
[plugins."io.containerd.internal.v1.opt"]
  path = "${join(dir, 'opt')}"
[${cri}]
  sandbox_image = "${PAUSE_IMAGE}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # Root here lacks CAP_SYS_RESOURCE: it cannot lower oom_score_adj, and without this runc fails
  # with "can't get final child's PID from pipe".
  restrict_oom_score_adj = true
  # Pod namespaces under the node's state dir, not the machine's /var/run/netns, unless netlease
  # runs as pods: its agent pod mounts the runtime's netns dir, as on a real node.
  netns_mounts_under_state_dir = ${netnsUnderState}
  disable_apparmor = true
  enable_selinux = false
[${cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"
[${cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[${cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
[${cri}.cni]
  bin_dir = "${cni.binDir}"
  conf_dir = "${cni.confDir}"
  max_conf_num = 1
`;
}

async function ctrAt(socket: string, args: string[]): Promise<string> {
  const { exitCode, stdout, stderr } = await runToEnd('ctr', ['--address', socket, '-n', 'k8s.io', ...args]);
  if (exitCode !== 0) throw new Error(`ctr ${args.join(' ')}: ${stderr.trim() || `exit ${exitCode}`}`);
  return stdout;
}

const lines = (text: string) => text.split('\n').filter(Boolean);

const SpecSchema = z.object({
  linux: z
    .object({ namespaces: z.array(z.object({ type: z.string(), path: z.string().optional() })) })
    .partial(),
});

/** The network namespace a container was given (a sandbox's: the one CNI configured). */
export async function netnsOf(ctr: Containerd['ctr'], containerId: string): Promise<string | undefined> {
  const spec = SpecSchema.parse(JSON.parse(await ctr(['containers', 'info', '--spec', containerId])));
  return spec.linux.namespaces?.find((ns) => ns.type === 'network')?.path;
}

/** Shims of a containerd still running after it stopped: their command line names its socket. */
export function shimsOf(socket: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => {
      const argv = cmdlineOf(pid).split('\0');
      return argv[0]?.endsWith('containerd-shim-runc-v2') === true && argv.includes(socket);
    });
}

/** Kills and deletes every task; returns the network namespaces of the containers (kept). */
async function killTasks(ctr: Containerd['ctr']): Promise<string[]> {
  for (const task of lines(await ctr(['tasks', 'list', '--quiet'])))
    await ctr(['tasks', 'delete', '--force', task]).catch(() => undefined);
  const netns: string[] = [];
  for (const id of lines(await ctr(['containers', 'list', '--quiet']))) {
    const path = await netnsOf(ctr, id).catch(() => undefined);
    if (path && !path.startsWith('/proc/')) netns.push(path);
  }
  return [...new Set(netns)];
}

/** A CRI-made namespace: unmount its nsfs bind mount and remove the file. */
async function removeNetns(path: string): Promise<void> {
  await runToEnd('umount', ['--lazy', path]);
  await runToEnd('rm', ['-f', path]);
}

export async function startContainerd(
  dir: string,
  cni: CniDir,
  images: NodeImage[],
  logFd?: number,
  netnsUnderState = true,
): Promise<Containerd> {
  const socket = join(dir, 'containerd.sock');
  const file = join(dir, 'containerd.toml');
  writeFileSync(file, config(dir, socket, cni, netnsUnderState));
  const out = logFd ?? 'ignore';
  const daemon = startTracked('containerd', ['--config', file], { stdio: ['ignore', out, out] });
  const ctr = (args: string[]) => ctrAt(socket, args);
  let exited = false;
  void daemon.exited.then(() => (exited = true));
  const up = await waitFor(
    async () =>
      exited ||
      (await ctr(['version']).then(
        () => true,
        () => false,
      )),
    30_000,
    200,
  );
  if (!up || exited) {
    await stopPid(daemon.pid);
    throw new Error(`containerd (${file}) did not serve ${socket}${exited ? ': it exited' : ''}`);
  }
  for (const image of images) await ctr(['images', 'import', image.file]);
  return {
    socket,
    process: daemon,
    ctr,
    async stop() {
      const netns = await killTasks(ctr).catch(() => []);
      await stopPid(daemon.pid);
      for (const pid of shimsOf(socket)) await stopPid(pid);
      for (const path of netns) await removeNetns(path);
    },
  };
}
