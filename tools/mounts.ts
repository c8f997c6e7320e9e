// Mounts a real node leaves under its directories (the kubelet bind-mounts its root dir onto
// itself and mounts pod volumes; containerd mounts rootfs overlays and /dev/shm), found in
// /proc/self/mountinfo and unmounted deepest first, lazily: a stopped node leaves none.
import { readFileSync } from 'node:fs';
import { runToEnd } from './processes';

/** Mount points at or under `dir` (mountinfo's 5th field, octal escapes decoded). */
export function mountsUnder(dir: string): string[] {
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => p !== undefined)
    .map((p) => p.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))));
  return points.filter((p) => p === dir || p.startsWith(`${dir}/`));
}

/** Unmounts everything at or under `dir`, repeating while a mount stacked on another remains. */
export async function unmountUnder(dir: string): Promise<void> {
  for (let round = 0; round < 5; round++) {
    const points = [...new Set(mountsUnder(dir))].sort((a, b) => b.length - a.length);
    if (points.length === 0) return;
    for (const point of points) await runToEnd('umount', ['--lazy', point]);
  }
  const left = mountsUnder(dir);
  if (left.length) throw new Error(`could not unmount ${left.join(', ')}`);
}
