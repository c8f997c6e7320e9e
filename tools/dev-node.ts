// The node half of `npm start`: the host namespace for ptp mode, a CNI directory with cnitool and
// a ptp conflist, and the node agent process.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ip, netnsPath } from '../kernel/ip';
import { netnsExists } from '../kernel/netns';
import {
  DEFAULT_CNI_SOCKET,
  DEFAULT_DELETE_QUEUE,
  NodeAgentConfigSchema,
  type NodeAgentConfig,
  type TemporalConnection,
} from '../domain/config';
import { loadConfigFile } from '../worker/config-file';
import { NODE_AGENT_NODE_FLAGS, PROCESS_ENV } from '../worker/process-flags';
import { writeCniDir, type CniDir } from './cni-dir';
import { type Tracked } from './processes';
import { startReadable } from './readable-log';

export interface DevNode {
  /** Starts (or restarts) the node agent process. */
  startAgent(): Tracked;
  cni: CniDir;
  hostNetns: string | undefined;
}

/** `ip netns add <name>` with loopback up, unless it exists; needs root (CAP_SYS_ADMIN). */
export async function ensureHostNetns(name: string): Promise<void> {
  if (await netnsExists(name)) return;
  if (process.getuid?.() !== 0) {
    console.log(
      `netlease: not root, so no network namespace ${name}: ptp activations will park until it exists`,
    );
    return;
  }
  console.log(`netlease: creating network namespace ${name} for the host ends of veth pairs`);
  await ip(undefined, ['netns', 'add', name]);
  await ip(name, ['link', 'set', 'dev', 'lo', 'up']);
}

export async function startDevNode(
  root: string,
  stateDir: string,
  temporal: Pick<TemporalConnection, 'address' | 'namespace' | 'taskQueue'>,
  kubeconfig: string | undefined,
): Promise<DevNode> {
  const givenPath = process.env.NETLEASE_NODE_AGENT_CONFIG ?? join(root, 'deploy', 'dev', 'node-agent.yaml');
  const given = loadConfigFile(givenPath, NodeAgentConfigSchema);
  // The agent reads pods (pre-produce) from the same cluster as the control worker.
  const config =
    given.kubernetes && !given.kubernetes.kubeconfig ? { ...given, kubernetes: { kubeconfig } } : given;
  const configPath = join(stateDir, 'node-agent.effective.json');
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  if (config.temporal.address !== temporal.address)
    throw new Error(`${givenPath}: temporal.address must be ${temporal.address}, the dev server's`);
  if (config.hostNetns && !config.hostNetns.includes('/')) await ensureHostNetns(config.hostNetns);

  const conflist = runConflist(join(root, 'deploy', 'dev', 'netlease-ptp.conflist'), temporal, config);
  const cni = writeCniDir(join(stateDir, 'cni'), { [conflist.name]: conflist });

  console.log('netlease: starting the node agent');
  const args = [
    ...NODE_AGENT_NODE_FLAGS,
    join(root, 'dist', 'worker', 'agent', 'node-agent.js'),
    '--config',
    configPath,
  ];
  return {
    startAgent: () => startReadable(process.execPath, args, { env: { ...process.env, ...PROCESS_ENV } }),
    cni,
    hostNetns: config.hostNetns ? netnsPath(config.hostNetns) : undefined,
  };
}

interface Conflist {
  name: string;
  plugins: Array<Record<string, unknown>>;
}

/**
 * The ptp conflist pointed at this run: its Temporal (NETLEASE_CONFIG may move it off
 * 127.0.0.1:7233, and the agent serves a call on the network config's Temporal) and the agent's
 * socket and DEL queue when NETLEASE_NODE_AGENT_CONFIG moves them off the defaults.
 */
function runConflist(
  path: string,
  temporal: Pick<TemporalConnection, 'address' | 'namespace' | 'taskQueue'>,
  agent: Pick<NodeAgentConfig, 'cniSocket' | 'deleteQueue'>,
): Conflist {
  const conflist = JSON.parse(readFileSync(path, 'utf8')) as Conflist;
  const paths = {
    ...(agent.cniSocket !== DEFAULT_CNI_SOCKET ? { agentSocket: agent.cniSocket } : {}),
    ...(agent.deleteQueue !== DEFAULT_DELETE_QUEUE ? { deleteQueue: agent.deleteQueue } : {}),
  };
  const { address, namespace, taskQueue } = temporal;
  const plugins = conflist.plugins.map((plugin) =>
    plugin.type === 'netlease'
      ? { ...plugin, temporal: { address, namespace, taskQueue }, ...paths }
      : plugin,
  );
  return { ...conflist, plugins };
}
