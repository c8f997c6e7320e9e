import { existsSync, readFileSync, rmSync } from 'node:fs';
import { stopPid } from '../../tools/processes';
import { SERVER_FILE } from './server-file';

export default async function globalTeardown(): Promise<void> {
  if (!existsSync(SERVER_FILE)) return;
  const { pids, kubeDir } = JSON.parse(readFileSync(SERVER_FILE, 'utf8')) as {
    pids: number[];
    kubeDir: string;
  };
  for (const pid of pids) await stopPid(pid);
  rmSync(kubeDir, { recursive: true, force: true });
  rmSync(SERVER_FILE, { force: true });
}
