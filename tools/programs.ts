// Pinned external programs, built once from the Go module proxy into a cache outside the work tree.
// Usage: node dist/tools/programs.js [name|set ...]   (no names: the `default` set, what `npm test` and
// `npm start` need; `cluster`: the real node's kubelet and controllers, see tools/cluster.ts;
// `conformance`: Kubernetes' e2e.test and agnhost, see tools/conformance.ts)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface Program {
  name: string;
  version: string;
  /** `go install pkg@version`: the simple case. */
  install?: string;
  /** The name `go install` gives the binary (its package's last element), when not `name`. */
  installedAs?: string;
  /**
   * A wrapper module requiring `module@version`, then `go build` of `pkg` (`go test -c` when
   * `test`: the package's test binary). `replaceStaging`: pin k8s.io/kubernetes' staging modules;
   * `copyReplaces`: the module's own versioned `replace` lines. `dir`: the wrapper module's name
   * in the cache, when programs built at different times share it.
   */
  wrapper?: {
    module: string;
    pkg: string;
    test?: boolean;
    replaceStaging?: boolean;
    copyReplaces?: boolean;
    dir?: string;
  };
  ldflags?: string;
  /**
   * Which set asks for it: `default` (absent) is built by every bootstrap, `cluster` by the real
   * node's (`npm test`, `npm start -- --cluster`), `production` by the production Temporal's
   * (`npm test`, `npm start -- --temporal production`), `conformance` by `npm run conformance`,
   * `bench` only when asked for by name.
   */
  set?: 'cluster' | 'production' | 'conformance' | 'bench';
}

const KUBE_VERSION = 'v1.34.4';
/** The version the binaries report (`/version`, the Node's kubeletVersion) instead of v0.0.0-master. */
const KUBE_LDFLAGS = [
  '-s -w',
  ...['gitVersion=v1.34.4', 'gitMajor=1', 'gitMinor=34'].map((v) => `-X k8s.io/component-base/version.${v}`),
].join(' ');

/** A program of k8s.io/kubernetes: they share one wrapper module and are built together. */
const kubeProgram = (
  name: string,
  set?: 'cluster' | 'conformance',
  pkg = `k8s.io/kubernetes/cmd/${name}`,
  test?: boolean,
): Program => ({
  name,
  version: KUBE_VERSION,
  wrapper: { module: 'k8s.io/kubernetes', pkg, replaceStaging: true, dir: 'kubernetes', test },
  ldflags: KUBE_LDFLAGS,
  set,
});

export const PROGRAMS: Program[] = [
  { name: 'temporal', version: 'v1.5.1', install: 'github.com/temporalio/cli/cmd/temporal' },
  {
    name: 'etcd',
    version: 'v3.6.16',
    wrapper: { module: 'go.etcd.io/etcd/server/v3', pkg: 'go.etcd.io/etcd/server/v3' },
  },
  kubeProgram('kube-apiserver'),
  ...['kubelet', 'kube-scheduler', 'kube-controller-manager'].map((name) => kubeProgram(name, 'cluster')),
  // Kubernetes' own e2e binary (its test package) and the image program its specs run.
  kubeProgram('e2e.test', 'conformance', 'k8s.io/kubernetes/test/e2e', true),
  kubeProgram('agnhost', 'conformance', 'k8s.io/kubernetes/test/images/agnhost'),
  // The production-shaped Temporal (tools/temporal-production.ts): the server and its schema tool.
  ...[
    ['temporal-server', 'server'],
    ['temporal-sql-tool', 'tools/sql'],
  ].map(([name, cmd]) => ({
    name: name ?? '',
    version: 'v1.29.1',
    install: `go.temporal.io/server/cmd/${cmd ?? ''}`,
    installedAs: cmd?.split('/').pop(),
    set: 'production' as const,
  })),
  // The chart's linter and renderer (deploy/helm/netlease; the in-cluster install goes through it).
  { name: 'helm', version: 'v3.22.0', install: 'helm.sh/helm/v3/cmd/helm', set: 'cluster' },
  { name: 'cnitool', version: 'v1.3.0', install: 'github.com/containernetworking/cni/cnitool' },
  ...['main/bridge', 'main/loopback', 'ipam/host-local'].map((plugin) => ({
    name: plugin.split('/')[1] ?? plugin,
    version: 'v1.9.1',
    install: `github.com/containernetworking/plugins/plugins/${plugin}`,
  })),
  {
    name: 'whereabouts',
    version: 'v0.9.4',
    wrapper: {
      module: 'github.com/k8snetworkplumbingwg/whereabouts',
      pkg: 'github.com/k8snetworkplumbingwg/whereabouts/cmd',
      copyReplaces: true,
    },
    set: 'bench',
  },
];

export const DEFAULT_PROGRAMS = PROGRAMS.filter((p) => !p.set).map((p) => p.name);
export const CLUSTER_PROGRAMS = PROGRAMS.filter((p) => p.set === 'cluster').map((p) => p.name);
export const PRODUCTION_PROGRAMS = PROGRAMS.filter((p) => p.set === 'production').map((p) => p.name);
export const CONFORMANCE_PROGRAMS = PROGRAMS.filter((p) => p.set === 'conformance').map((p) => p.name);

export function cacheRoot(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'netlease');
}

function binDir(program: Program): string {
  return join(cacheRoot(), 'bin', `${program.name}-${program.version}`);
}

export function programPath(name: string): string {
  const program = PROGRAMS.find((p) => p.name === name);
  if (!program) throw new Error(`unknown program ${name}`);
  return join(binDir(program), name);
}

function go(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): string {
  const result = spawnSync('go', args, {
    cwd,
    env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=mod', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`go ${args.join(' ')} failed (exit ${result.status})`);
  return result.stdout;
}

interface Downloaded {
  /** The module's go.mod in the module cache. */
  GoMod: string;
  /** The module's files in the module cache (read-only). */
  Dir: string;
}

const download = (module: string, version: string, cwd: string): Downloaded =>
  JSON.parse(go(['mod', 'download', '-json', `${module}@${version}`], cwd)) as Downloaded;

/** `replace k8s.io/x => k8s.io/x v0.Y.Z` for every staging module k8s.io/kubernetes points at locally. */
function stagingReplaces(goMod: string, version: string): string[] {
  const staging = [...goMod.matchAll(/^\s*(k8s\.io\/[\w.-]+)\s+=>\s+\.\/staging\//gm)];
  const minor = version.replace(/^v1\./, 'v0.');
  return staging.map((m) => `replace ${m[1]} => ${m[1]} ${minor}`);
}

/** The module's own `replace a => b vX` lines (a replace is honoured only in the main module). */
function copiedReplaces(goMod: string): string[] {
  const single = [...goMod.matchAll(/^replace\s+(\S+(?:\s+v\S+)?\s+=>\s+\S+\s+v\S+)\s*$/gm)];
  const block = /^replace\s*\(([^)]*)\)/m.exec(goMod)?.[1] ?? '';
  const inBlock = [...block.matchAll(/^\s*(\S+(?:\s+v\S+)?\s+=>\s+\S+\s+v\S+)\s*$/gm)];
  return [...single, ...inBlock].map((m) => `replace ${m[1]}`);
}

function replacesFor(program: Program, dir: string): string[] {
  const wrapper = program.wrapper;
  if (!wrapper?.replaceStaging && !wrapper?.copyReplaces) return [];
  const goMod = readFileSync(download(wrapper.module, program.version, dir).GoMod, 'utf8');
  return wrapper.replaceStaging ? stagingReplaces(goMod, program.version) : copiedReplaces(goMod);
}

/** Where a wrapper program's module lies in the Go module cache (e.g. to read its manifests). */
export function programModuleDir(name: string): string {
  const program = PROGRAMS.find((p) => p.name === name);
  if (!program?.wrapper) throw new Error(`${name} is not a wrapper program`);
  return download(program.wrapper.module, program.version, cacheRoot()).Dir;
}

/** Programs that one wrapper module builds in one `go build`: same module, version and flags. */
const groupKey = (p: Program) =>
  p.wrapper
    ? `${p.wrapper.module}@${p.version} ${p.ldflags ?? ''} ${String(p.wrapper.replaceStaging)}`
    : p.name;

/**
 * One wrapper module requiring the module, importing every program's package, and one `go build`
 * of them all (`-o <dir>/`: each binary named after its package): the module graph is tidied once
 * and the packages they share are compiled once, in parallel.
 */
function buildWrapper(programs: Program[], outDir: string): void {
  const [first] = programs;
  const wrapper = first?.wrapper;
  if (!first || !wrapper) return;
  const name = wrapper.dir ?? (programs.length > 1 ? wrapper.module.split('/').pop() : first.name);
  const dir = join(cacheRoot(), 'src', `${name}-${first.version}`);
  mkdirSync(dir, { recursive: true });
  const replaces = replacesFor(first, dir);
  const pkgs = programs.map((p) => p.wrapper?.pkg ?? '');
  const [tests, builds] = [programs.filter((p) => p.wrapper?.test), programs.filter((p) => !p.wrapper?.test)];
  writeFileSync(
    join(dir, 'go.mod'),
    [
      `module netlease.local/${name}`,
      '',
      'go 1.24',
      '',
      `require ${wrapper.module} ${first.version}`,
      '',
      ...replaces,
      '',
    ].join('\n'),
  );
  const imports = pkgs.map((pkg) => `import _ "${pkg}"\n`).join('');
  writeFileSync(join(dir, 'tools.go'), `//go:build tools\n\npackage tools\n\n${imports}`);
  go(['mod', 'tidy'], dir);
  const flags = ['-trimpath', `-ldflags=${first.ldflags ?? '-s -w'}`];
  const out = builds.length > 1 ? `${outDir}/` : join(outDir, builds[0]?.name ?? '');
  if (builds.length) go(['build', ...flags, '-o', out, ...builds.map((p) => p.wrapper?.pkg ?? '')], dir);
  // A test binary is one package's; its test files' imports are resolved as it builds (-mod=mod).
  for (const p of tests) go(['test', '-c', ...flags, '-o', join(outDir, p.name), p.wrapper?.pkg ?? ''], dir);
}

/** Builds the programs not in the cache yet (a group of wrapper programs in one `go build`). */
export function ensurePrograms(programs: Program[]): void {
  const missing = programs.filter((p) => !existsSync(join(binDir(p), p.name)));
  const groups = new Map<string, Program[]>();
  for (const p of missing) groups.set(groupKey(p), [...(groups.get(groupKey(p)) ?? []), p]);
  for (const group of groups.values()) buildGroup(group);
}

export function ensureProgram(program: Program): string {
  ensurePrograms([program]);
  return join(binDir(program), program.name);
}

function buildGroup(group: Program[]): void {
  const started = Date.now();
  const names = group.map((p) => `${p.name} ${p.version}`).join(', ');
  const where = group.map((p) => binDir(p)).join(', ');
  console.log(`netlease: building ${names} from the Go module proxy (once; cached in ${where})`);
  const staging = join(cacheRoot(), 'bin', `.partial-${group[0]?.name ?? ''}`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  for (const program of group) {
    if (!program.install) continue;
    const ldflags = program.ldflags ?? '-s -w';
    go(
      ['install', '-trimpath', `-ldflags=${ldflags}`, `${program.install}@${program.version}`],
      cacheRoot(),
      {
        GOBIN: staging,
        GOFLAGS: '',
      },
    );
  }
  buildWrapper(
    group.filter((p) => p.wrapper),
    staging,
  );
  // Each program into its own versioned directory, atomically: a half-built one is never found.
  for (const program of group) {
    const partial = `${binDir(program)}.partial`;
    rmSync(partial, { recursive: true, force: true });
    mkdirSync(partial, { recursive: true });
    renameSync(join(staging, program.installedAs ?? program.name), join(partial, program.name));
    rmSync(binDir(program), { recursive: true, force: true });
    renameSync(partial, binDir(program));
  }
  rmSync(staging, { recursive: true, force: true });
  console.log(`netlease: built ${names} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

/** Names and set names (`default`, `cluster`) → programs, in order, each once. */
export function programsNamed(names: string[]): Program[] {
  const sets: Record<string, string[]> = {
    default: DEFAULT_PROGRAMS,
    cluster: CLUSTER_PROGRAMS,
    production: PRODUCTION_PROGRAMS,
    conformance: CONFORMANCE_PROGRAMS,
  };
  const wanted = new Set((names.length ? names : ['default']).flatMap((n) => sets[n] ?? [n]));
  return [...wanted].map((name) => {
    const program = PROGRAMS.find((p) => p.name === name);
    if (!program)
      throw new Error(
        `unknown program ${name}; known: ${PROGRAMS.map((p) => p.name).join(', ')}, or a set: default, cluster, production, conformance`,
      );
    return program;
  });
}

if (require.main === module) ensurePrograms(programsNamed(process.argv.slice(2)));
