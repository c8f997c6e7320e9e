// The images a real node needs, made here without a registry: the sandbox ("pause") program
// compiled statically from the kubernetes module's build/pause/linux/pause.c, and Debian's
// busybox-static as the workload. Each is packed by hand as an OCI image archive (oci-layout,
// index.json, blobs: one uncompressed tar layer, config, manifest) that `ctr images import` reads.
// Built once into the cache; pods name them with imagePullPolicy: Never.
// Usage: node dist/tools/node-images.js   (builds the missing archives, prints what it builds)
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { cacheRoot, programModuleDir } from './programs';

export interface NodeImage {
  /** The name pods use (imagePullPolicy: Never) and the CRI's sandbox_image. */
  ref: string;
  /** The archive in the cache. */
  file: string;
}

export const PAUSE_IMAGE = 'netlease.local/pause:3.10';
export const BUSYBOX_IMAGE = 'netlease.local/busybox:1';
const BUSYBOX = '/bin/busybox'; // Debian's busybox-static
const OCI = 'application/vnd.oci.image';

export const imageDir = () => join(cacheRoot(), 'images');
export const archiveOf = (ref: string) => join(imageDir(), `${ref.replace(/[/:]/g, '_')}.oci.tar`);

export function run(command: string, args: string[]): string {
  const result = spawnSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status}): ${result.stderr.trim()}`);
  return result.stdout;
}

/** A reproducible tar of `dir` (root-owned, mtime 0, sorted). */
const tarOf = (dir: string, out: string) =>
  run('tar', [
    '--create',
    '--file',
    out,
    '--sort=name',
    '--owner=0',
    '--group=0',
    '--numeric-owner',
    '--mtime=@0',
    '-C',
    dir,
    '.',
  ]);

interface Blob {
  mediaType: string;
  digest: string;
  size: number;
}

function putBlob(layout: string, mediaType: string, content: Buffer): Blob {
  const hex = createHash('sha256').update(content).digest('hex');
  writeFileSync(join(layout, 'blobs', 'sha256', hex), content);
  return { mediaType, digest: `sha256:${hex}`, size: content.length };
}

const json = (value: object) => Buffer.from(JSON.stringify(value));

/** What an image runs: its entrypoint, the arguments it gets when a pod gives none, its PATH. */
export interface ImageConfig {
  entrypoint?: string[];
  cmd?: string[];
  path?: string;
  /** Variables besides PATH (`NAME=value`), the working directory, labels. */
  env?: string[];
  workingDir?: string;
  labels?: Record<string, string>;
}

/** Packs `rootfs` as an OCI archive of one layer, named `ref`, into `archive` (default: the cache's). */
export function packImage(
  ref: string,
  rootfs: string,
  image: ImageConfig,
  work: string,
  archive = archiveOf(ref),
): void {
  const layout = join(work, 'layout');
  mkdirSync(join(layout, 'blobs', 'sha256'), { recursive: true });
  const layerTar = join(work, 'layer.tar');
  tarOf(rootfs, layerTar);
  const layer = putBlob(layout, `${OCI}.layer.v1.tar`, readFileSync(layerTar));
  rmSync(layerTar);
  const config = putBlob(
    layout,
    `${OCI}.config.v1+json`,
    json({
      architecture: 'amd64',
      os: 'linux',
      config: {
        ...(image.entrypoint ? { Entrypoint: image.entrypoint } : {}),
        ...(image.cmd ? { Cmd: image.cmd } : {}),
        Env: [`PATH=${image.path ?? '/bin'}`, ...(image.env ?? [])],
        ...(image.workingDir ? { WorkingDir: image.workingDir } : {}),
        ...(image.labels ? { Labels: image.labels } : {}),
      },
      rootfs: { type: 'layers', diff_ids: [layer.digest] },
    }),
  );
  const manifest = putBlob(
    layout,
    `${OCI}.manifest.v1+json`,
    json({ schemaVersion: 2, mediaType: `${OCI}.manifest.v1+json`, config, layers: [layer] }),
  );
  // containerd names the image from io.containerd.image.name; other tools read ref.name.
  const annotations = { 'io.containerd.image.name': ref, 'org.opencontainers.image.ref.name': ref };
  const platform = { architecture: 'amd64', os: 'linux' };
  const index = {
    schemaVersion: 2,
    mediaType: `${OCI}.index.v1+json`,
    manifests: [{ ...manifest, platform, annotations }],
  };
  writeFileSync(join(layout, 'index.json'), JSON.stringify(index));
  writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  const partial = `${archive}.partial`;
  tarOf(layout, partial);
  renameSync(partial, archive);
}

/** The libraries `ldd` names for `file` (the loader too); none for a file that is not this host's ELF. */
function librariesOf(file: string): string[] {
  const ldd = spawnSync('ldd', [file], { encoding: 'utf8' });
  if (ldd.status !== 0) return [];
  return [...ldd.stdout.matchAll(/(\/\S+) \(0x/g)].map((m) => m[1] ?? '');
}

/** Each library `file` needs (a native addon, say), at the same path under `rootfs`. */
export function copyLibrariesOf(rootfs: string, file: string): void {
  for (const library of librariesOf(file)) {
    mkdirSync(join(rootfs, dirname(library)), { recursive: true });
    copyFileSync(library, join(rootfs, library)); // a link's target, under the link's name
  }
}

/** `program` and every library `ldd` names (the loader too), at the same paths under `rootfs`. */
export function copyWithLibraries(rootfs: string, program: string, to: string): void {
  if (!librariesOf(program).length) throw new Error(`ldd ${program} names no library`);
  mkdirSync(join(rootfs, dirname(to)), { recursive: true });
  copyFileSync(program, join(rootfs, to));
  copyLibrariesOf(rootfs, program);
}

export const installed = (command: string): string => {
  const path = run('sh', ['-c', `command -v ${command} || true`]).trim();
  if (!path) throw new Error(`${command} is missing (sh tools/bootstrap.sh installs it)`);
  return path;
};

/** pause.c of the pinned kubernetes module, compiled statically: the sandbox's only process. */
export function pauseRootfs(rootfs: string): void {
  const source = join(programModuleDir('kube-apiserver'), 'build', 'pause', 'linux', 'pause.c');
  run('gcc', ['-Os', '-static', '-Wall', '-DVERSION=v3.10-netlease', '-o', join(rootfs, 'pause'), source]);
  run('strip', [join(rootfs, 'pause')]);
}

/** Busybox and a link per applet in /bin (sh, sleep, ip, ping, ...) but those in `without`. */
export function busyboxRootfs(rootfs: string, without: string[] = []): void {
  if (!existsSync(BUSYBOX)) throw new Error(`${BUSYBOX} is missing: install Debian's busybox-static`);
  const bin = join(rootfs, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'busybox'), readFileSync(BUSYBOX), { mode: 0o755 });
  for (const applet of run(BUSYBOX, ['--list']).split('\n').filter(Boolean))
    if (applet !== 'busybox' && !without.includes(applet)) symlinkSync('busybox', join(bin, applet));
  for (const dir of ['tmp', 'etc', 'proc', 'sys', 'dev']) mkdirSync(join(rootfs, dir));
}

/** An image made here: its name, how its root filesystem is made, what it runs. */
export interface ImageSpec extends ImageConfig {
  ref: string;
  make: (rootfs: string) => void;
}

const IMAGES: ImageSpec[] = [
  { ref: PAUSE_IMAGE, make: pauseRootfs, entrypoint: ['/pause'] },
  { ref: BUSYBOX_IMAGE, make: (rootfs) => busyboxRootfs(rootfs), entrypoint: ['/bin/sh'] },
];

/** The node's archives, built when missing (each takes a second or two). */
export const ensureNodeImages = (): NodeImage[] => ensureImages(IMAGES);

/** The archives of `specs`, each built when missing. */
export function ensureImages(specs: ImageSpec[]): NodeImage[] {
  mkdirSync(imageDir(), { recursive: true });
  return specs.map(({ ref, make, ...image }) => {
    const file = archiveOf(ref);
    if (existsSync(file)) return { ref, file };
    console.log(`netlease: building the image ${ref} (once; cached in ${file})`);
    const work = mkdtempSync(join(imageDir(), '.build-'));
    try {
      const rootfs = join(work, 'rootfs');
      mkdirSync(rootfs);
      make(rootfs);
      packImage(ref, rootfs, image, work);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
    return { ref, file };
  });
}

if (require.main === module) ensureNodeImages();
