import { existsSync, readFileSync, rmSync } from 'node:fs';
import { stopPid } from '../../tools/processes';
import { SERVER_FILE } from './server-file';

export default async function globalTeardown(): Promise<void> {
  if (!existsSync(SERVER_FILE)) return;
  const { pids, dir } = JSON.parse(readFileSync(SERVER_FILE, 'utf8')) as { pids: number[]; dir: string };
  for (const pid of pids) await stopPid(pid);
  rmSync(dir, { recursive: true, force: true });
  rmSync(SERVER_FILE, { force: true });
}
