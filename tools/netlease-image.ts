// The netlease image, `netlease.local/netlease:<version>-<content hash>`, built here without Docker
// as an OCI archive (tools/node-images packs it) from the compiled sources: the control worker, the
// node agent and install-cni (dist/), the static CNI shim (dist/bin/netlease), the production
// node_modules, Node.js, and iproute2's `ip` and util-linux's `nsenter` with their libraries.
// One recipe with the Dockerfile: RECIPE below is what both make, and test/unit/image-recipe reads
// the Dockerfile's last stage and build steps against it. The tag's hash covers every input, so a
// changed source is a new image (a DaemonSet rolls to it) and an unchanged one is not built again.
// Usage: node dist/tools/netlease-image.js   (prints the image's name, archive and size)
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import {
  archiveOf,
  copyLibrariesOf,
  copyWithLibraries,
  imageDir,
  installed,
  packImage,
  type NodeImage,
} from './node-images';
import { cacheRoot } from './programs';

export const NETLEASE_REPOSITORY = 'netlease.local/netlease';

/** What the image is: the Dockerfile's last stage says the same (test/unit/image-recipe). */
export const RECIPE = {
  nodeMajor: 20,
  workdir: '/app',
  env: { NODE_ENV: 'production' },
  /**
   * The runtime stage's Debian packages, and the programs the node agent runs from each (kernel/:
   * `ip`, `nsenter`, and `cat` and `tee` for /proc/sys/.../forwarding in the host namespace).
   */
  packages: { iproute2: ['ip'], 'util-linux': ['nsenter'], coreutils: ['cat', 'tee'] },
  /** The app directory's entries, as the Dockerfile's COPY lines place them. */
  app: ['package.json', 'node_modules', 'dist', 'dist/bin/netlease'],
  /** Built but not shipped (the Dockerfile removes them after `npm run build`). */
  notShipped: ['dist/test', 'dist/.tsbuildinfo'],
  /** `npm prune --omit=dev` there, `npm install --omit=dev` here: the production dependencies. */
  omit: 'dev',
} as const;

/** Debian's PATH, as the node image has it; Node.js in /usr/local/bin as there. */
const PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const sha = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

/** Every regular file under `dir` but those under `skip` (relative), in a stable order. */
function filesUnder(dir: string, skip: readonly string[] = [], base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      if (skip.includes(relative(base, path))) return [];
      if (entry.isDirectory()) return filesUnder(path, skip, base);
      return entry.isFile() ? [path] : [];
    });
}

const programs = () => Object.values(RECIPE.packages).flat().map(installed);

/** The hash of everything the image is made of. */
function inputsHash(root: string): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify(RECIPE));
  for (const file of ['package.json', 'package-lock.json']) hash.update(readFileSync(join(root, file)));
  const dist = join(root, 'dist');
  const skip = RECIPE.notShipped.map((p) => relative('dist', p));
  for (const file of filesUnder(dist, skip)) hash.update(relative(dist, file)).update(readFileSync(file));
  for (const program of [process.execPath, ...programs()]) hash.update(program).update(readFileSync(program));
  return hash.digest('hex').slice(0, 12);
}

const packageVersion = (root: string): string =>
  (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

/** The production node_modules of the lock, installed once per lock into the cache. */
function productionModules(root: string): string {
  const lock = readFileSync(join(root, 'package-lock.json'));
  const dir = join(
    cacheRoot(),
    'image-node-modules',
    sha(Buffer.concat([lock, readFileSync(join(root, 'package.json'))])).slice(0, 16),
  );
  if (existsSync(join(dir, 'node_modules'))) return join(dir, 'node_modules');
  console.log(`netlease: installing the image's production dependencies (once per lock; cached in ${dir})`);
  const partial = `${dir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  for (const file of ['package.json', 'package-lock.json']) cpSync(join(root, file), join(partial, file));
  // `npm install`, not `npm ci`: the lock lacks @swc/core's off-platform packages (see .ci/run).
  const npm = spawnSync(
    'npm',
    ['install', `--omit=${RECIPE.omit}`, '--no-audit', '--no-fund', '--prefer-offline'],
    {
      cwd: partial,
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  if (npm.status !== 0) throw new Error(`npm install --omit=${RECIPE.omit} failed (exit ${npm.status})`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
  return join(dir, 'node_modules');
}

/** The root filesystem: Node.js, ip and nsenter with their libraries, and the app in /app. */
function netleaseRootfs(root: string, rootfs: string): void {
  copyWithLibraries(rootfs, process.execPath, '/usr/local/bin/node');
  for (const program of programs()) copyWithLibraries(rootfs, program, program);
  cpSync('/etc/iproute2', join(rootfs, 'etc', 'iproute2'), { recursive: true });
  const app = join(rootfs, RECIPE.workdir);
  mkdirSync(app, { recursive: true });
  cpSync(join(root, 'package.json'), join(app, 'package.json'));
  // Hard links into the cache's copy: tar stores the files, and nothing here writes to them.
  const linked = spawnSync('cp', ['-al', productionModules(root), join(app, 'node_modules')]);
  if (linked.status !== 0) throw new Error(`cp -al node_modules failed: ${String(linked.stderr)}`);
  cpSync(join(root, 'dist'), join(app, 'dist'), { recursive: true });
  for (const path of RECIPE.notShipped) rmSync(join(app, path), { recursive: true, force: true });
  rmSync(join(app, 'dist', '.built'), { force: true });
  // Native addons (Temporal's core bridge, swc) need libraries Node.js itself does not (librt).
  for (const addon of filesUnder(join(app, 'node_modules')).filter((f) => f.endsWith('.node')))
    copyLibrariesOf(rootfs, addon);
  if (!existsSync(join(app, 'dist', 'bin', 'netlease')))
    throw new Error('dist/bin/netlease (the CNI shim) is missing: run sh tools/bootstrap.sh');
  for (const dir of ['tmp', 'proc', 'sys', 'dev', 'run', 'root', 'var'])
    mkdirSync(join(rootfs, dir), { recursive: true, mode: dir === 'tmp' ? 0o1777 : 0o755 });
  symlinkSync('/run', join(rootfs, 'var', 'run'));
  writeFileSync(join(rootfs, 'etc', 'passwd'), 'root:x:0:0:root:/root:/usr/sbin/nologin\n');
  writeFileSync(join(rootfs, 'etc', 'group'), 'root:x:0:\n');
}

export interface NetleaseImage extends NodeImage {
  tag: string;
  /** The archive's size in bytes. */
  size: number;
}

/** `netlease.local/netlease:<package version>-<hash of the inputs>`. */
export const netleaseImageRef = (root: string): string =>
  `${NETLEASE_REPOSITORY}:${packageVersion(root)}-${inputsHash(root)}`;

/**
 * The image of `root`'s compiled tree, built when its archive is missing. `as`: another tag for
 * the same root filesystem, with its own config (a new image ID), e.g. the upgrade test's "next".
 */
export function ensureNetleaseImage(root: string, as?: string): NetleaseImage {
  const base = netleaseImageRef(root);
  const ref = as ? `${NETLEASE_REPOSITORY}:${as}` : base;
  const tag = ref.slice(NETLEASE_REPOSITORY.length + 1);
  const file = archiveOf(ref);
  if (!existsSync(file)) {
    const started = Date.now();
    console.log(`netlease: building the image ${ref} (cached in ${file})`);
    mkdirSync(imageDir(), { recursive: true });
    const work = mkdtempSync(join(imageDir(), '.build-'));
    try {
      const rootfs = join(work, 'rootfs');
      mkdirSync(join(rootfs, 'etc'), { recursive: true });
      netleaseRootfs(root, rootfs);
      packImage(ref, rootfs, imageConfig(tag, base), work, file);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
    console.log(`netlease: built ${ref} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    pruneOldImages(file);
  }
  return { ref, tag, file, size: statSync(file).size };
}

/** Each source change is a new archive (about 400 MiB): the cache keeps the newest few. */
const KEPT_ARCHIVES = 4;
function pruneOldImages(keep: string): void {
  const prefix = archiveOf(`${NETLEASE_REPOSITORY}:`).split('/').pop() ?? '';
  const archives = readdirSync(imageDir())
    .filter((f) => f.startsWith(prefix) && f.endsWith('.oci.tar'))
    .map((f) => join(imageDir(), f))
    .filter((f) => f !== keep)
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  for (const old of archives.slice(KEPT_ARCHIVES - 1)) rmSync(old, { force: true });
}

const imageConfig = (tag: string, base: string) => ({
  cmd: ['node'],
  path: PATH,
  env: Object.entries(RECIPE.env).map(([name, value]) => `${name}=${value}`),
  workingDir: RECIPE.workdir,
  labels: { 'org.opencontainers.image.version': tag, 'netlease.contents': base },
});

if (require.main === module) {
  const root = join(__dirname, '..', '..');
  const image = ensureNetleaseImage(root, process.argv[2]);
  console.log(`${image.ref} ${image.file} ${(image.size / 1024 / 1024).toFixed(0)} MiB`);
}
