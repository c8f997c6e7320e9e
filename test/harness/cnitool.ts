// The real `cnitool` (v1.3.0) with the real reference plugins and netlease in one CNI_PATH.
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { programPath } from '../../tools/programs';
import { writeCniDir, type CniDir } from '../../tools/cni-dir';
import { runToEnd, type Finished } from '../../tools/processes';

export type CniSetup = CniDir;

/** A fresh CNI directory under the temp dir. */
export const cniSetup = (conflists: Record<string, object>): CniSetup =>
  writeCniDir(mkdtempSync(join(tmpdir(), 'netlease-cni-')), conflists);

/** The container id cnitool derives from the netns path. */
export const cnitoolContainerId = (netnsPath: string): string =>
  `cnitool-${createHash('sha512').update(netnsPath).digest('hex').slice(0, 20)}`;

export function cnitool(
  setup: CniSetup,
  verb: string,
  network: string,
  netnsPath: string,
  options: { inNetns?: string; env?: Record<string, string> } = {},
): Promise<Finished> {
  const tool = programPath('cnitool');
  const [command, args] = options.inNetns
    ? ['nsenter', [`--net=${options.inNetns}`, tool, verb, network, netnsPath]]
    : [tool, [verb, network, netnsPath]];
  const env = {
    PATH: process.env.PATH,
    NETCONFPATH: setup.confDir,
    CNI_PATH: setup.binDir,
    CNI_IFNAME: 'eth0',
    ...options.env,
  };
  return runToEnd(command, args, { env });
}
