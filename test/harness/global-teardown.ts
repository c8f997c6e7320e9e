import { existsSync, readFileSync, rmSync } from 'node:fs';
import { stopPid } from '../../tools/processes';
import { SERVER_FILE } from './server-file';

export default async function globalTeardown(): Promise<void> {
  if (!existsSync(SERVER_FILE)) return;
  const { pid } = JSON.parse(readFileSync(SERVER_FILE, 'utf8')) as { pid: number };
  await stopPid(pid);
  rmSync(SERVER_FILE, { force: true });
}
