// The real `cnitool` (v1.3.0) with the real reference plugins and netlease in one CNI_PATH.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { programPath } from '../../tools/programs';
import { writeCniDir, type CniDir } from '../../tools/cni-dir';

export type CniSetup = CniDir;

export interface CnitoolOutcome {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

/** A fresh CNI directory under the temp dir (see tools/cni-dir for `shimNetns`). */
export const cniSetup = (conflists: Record<string, object>, shimNetns?: string): CniSetup =>
  writeCniDir(mkdtempSync(join(tmpdir(), 'netlease-cni-')), conflists, shimNetns ? { shimNetns } : {});

/** The container id cnitool derives from the netns path. */
export const cnitoolContainerId = (netnsPath: string): string =>
  `cnitool-${createHash('sha512').update(netnsPath).digest('hex').slice(0, 20)}`;

export function cnitool(
  setup: CniSetup,
  verb: string,
  network: string,
  netnsPath: string,
  options: { inNetns?: string; env?: Record<string, string> } = {},
): Promise<CnitoolOutcome> {
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
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (exitCode) => resolve({ exitCode, stdout, stderr }));
  });
}
