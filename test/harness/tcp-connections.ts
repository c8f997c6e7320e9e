// A process's established TCP connections to a port, as `ss -tnp state established dport = :N`
// lists them: its socket inodes (/proc/<pid>/fd) looked up in its namespace's /proc/<pid>/net/tcp*.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

const ESTABLISHED = '01';

function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match?.[1]) inodes.add(match[1]);
    } catch {
      // closed between the listing and the read
    }
  }
  return inodes;
}

/** How many TCP connections process `pid` has established to `port` (any address). */
export function connectionsTo(pid: number, port: number): number {
  const inodes = socketInodes(pid);
  const rows = ['tcp', 'tcp6'].flatMap((file) =>
    readFileSync(`/proc/${pid}/net/${file}`, 'utf8').split('\n').slice(1),
  );
  return rows.filter((row) => {
    const [, , remote, state, , , , , , inode] = row.trim().split(/\s+/);
    const remotePort = Number.parseInt(remote?.split(':')[1] ?? '', 16);
    return state === ESTABLISHED && remotePort === port && inodes.has(inode ?? '');
  }).length;
}
