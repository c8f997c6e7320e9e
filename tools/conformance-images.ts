// The images Kubernetes' e2e specs run (tools/conformance), made here as tools/node-images makes
// the node's, without a registry: agnhost, built from the pinned kubernetes module, on busybox's
// applets with Debian's curl, netcat-openbsd and dash and their libraries (the specs run `curl` and
// `nc -u` through `sh -c` inside it; busybox's nc has no UDP), and the pause image under the
// framework's name.
// Names and versions are the pinned module's own (test/utils/image/manifest.go); the repo list
// written for KUBE_TEST_REPO_LIST points the framework's registries at the local names.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  busyboxRootfs,
  copyWithLibraries,
  ensureImages,
  installed,
  pauseRootfs,
  type ImageSpec,
  type NodeImage,
} from './node-images';
import { programModuleDir, programPath } from './programs';

/** The registries the framework's images come from, as KUBE_TEST_REPO_LIST names them. */
const LOCAL_REGISTRIES: Record<string, string> = {
  promoterE2eRegistry: 'netlease.local/e2e-test-images',
  gcRegistry: 'netlease.local',
};

interface FrameworkImage {
  /** The repo list's key of its registry (`promoterE2eRegistry`). */
  registry: string;
  name: string;
  version: string;
}

/** `configs[<Image>] = Config{list.<Registry>, "<name>", "<version>"}` of the pinned manifest. */
function frameworkImage(manifest: string, image: string): FrameworkImage {
  const line = new RegExp(`configs\\[${image}\\] = Config\\{list\\.(\\w+), "([^"]+)", "([^"]+)"\\}`);
  const [, registry = '', name = '', version = ''] = line.exec(manifest) ?? [];
  if (!registry) throw new Error(`test/utils/image/manifest.go of the pinned kubernetes names no ${image}`);
  return { registry: registry.charAt(0).toLowerCase() + registry.slice(1), name, version };
}

const localRef = ({ registry, name, version }: FrameworkImage): string => {
  const local = LOCAL_REGISTRIES[registry];
  if (!local) throw new Error(`no local registry for ${registry} (${name}): add it to LOCAL_REGISTRIES`);
  return `${local}/${name}:${version}`;
};

/**
 * agnhost as /agnhost (the image's entrypoint), busybox's applets, curl and nc in /usr/bin, and
 * dash as /bin/sh: Debian's busybox sh runs its own applet for `nc` whatever PATH holds.
 */
function agnhostRootfs(rootfs: string): void {
  busyboxRootfs(rootfs, ['nc', 'sh']);
  copyWithLibraries(rootfs, installed('dash'), '/bin/sh');
  copyFileSync(programPath('agnhost'), join(rootfs, 'agnhost'));
  copyWithLibraries(rootfs, installed('curl'), '/usr/bin/curl');
  copyWithLibraries(rootfs, installed('nc.openbsd'), '/usr/bin/nc');
  mkdirSync(join(rootfs, 'uploads')); // netexec's
}

/** The archives (built when missing) and the repo list that names them. */
export function ensureConformanceImages(dir: string): { images: NodeImage[]; repoList: string } {
  const manifest = readFileSync(
    join(programModuleDir('e2e.test'), 'test', 'utils', 'image', 'manifest.go'),
    'utf8',
  );
  const specs: ImageSpec[] = [
    {
      ref: localRef(frameworkImage(manifest, 'Agnhost')),
      make: agnhostRootfs,
      entrypoint: ['/agnhost'],
      cmd: ['pause'],
      path: '/usr/local/bin:/usr/bin:/bin',
    },
    { ref: localRef(frameworkImage(manifest, 'Pause')), make: pauseRootfs, entrypoint: ['/pause'] },
  ];
  const repoList = join(dir, 'repo-list.yaml');
  writeFileSync(
    repoList,
    Object.entries(LOCAL_REGISTRIES)
      .map(([key, value]) => `${key}: ${value}\n`)
      .join(''),
  );
  return { images: ensureImages(specs), repoList };
}
