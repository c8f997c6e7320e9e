// Pinned external programs, built once from the Go module proxy into a cache outside the work tree.
// Usage: node dist/tools/programs.js [name ...]   (no names: the ones `npm test` and `npm start` need)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface Program {
  name: string;
  version: string;
  /** `go install pkg@version`: the simple case. */
  install?: string;
  /**
   * A wrapper module requiring `module@version`, then `go build` of `pkg`. `replaceStaging`: pin
   * k8s.io/kubernetes' staging modules; `copyReplaces`: the module's own versioned `replace` lines.
   */
  wrapper?: { module: string; pkg: string; replaceStaging?: boolean; copyReplaces?: boolean };
  ldflags?: string;
  /** Built only when asked for by name (the bench's peers), not by `npm test` or `npm start`. */
  optional?: boolean;
}

export const PROGRAMS: Program[] = [
  { name: 'temporal', version: 'v1.5.1', install: 'github.com/temporalio/cli/cmd/temporal' },
  {
    name: 'etcd',
    version: 'v3.6.16',
    wrapper: { module: 'go.etcd.io/etcd/server/v3', pkg: 'go.etcd.io/etcd/server/v3' },
  },
  {
    name: 'kube-apiserver',
    version: 'v1.34.4',
    wrapper: {
      module: 'k8s.io/kubernetes',
      pkg: 'k8s.io/kubernetes/cmd/kube-apiserver',
      replaceStaging: true,
    },
  },
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
    optional: true,
  },
];

export const DEFAULT_PROGRAMS = PROGRAMS.filter((p) => !p.optional).map((p) => p.name);

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

function buildWrapper(program: Program, out: string): void {
  const wrapper = program.wrapper;
  if (!wrapper) return;
  const dir = join(cacheRoot(), 'src', `${program.name}-${program.version}`);
  mkdirSync(dir, { recursive: true });
  const replaces = replacesFor(program, dir);
  writeFileSync(
    join(dir, 'go.mod'),
    [
      `module netlease.local/${program.name}`,
      '',
      'go 1.24',
      '',
      `require ${wrapper.module} ${program.version}`,
      '',
      ...replaces,
      '',
    ].join('\n'),
  );
  writeFileSync(join(dir, 'tools.go'), `//go:build tools\n\npackage tools\n\nimport _ "${wrapper.pkg}"\n`);
  go(['mod', 'tidy'], dir);
  go(['build', '-trimpath', `-ldflags=${program.ldflags ?? '-s -w'}`, '-o', out, wrapper.pkg], dir);
}

export function ensureProgram(program: Program): string {
  const target = join(binDir(program), program.name);
  if (existsSync(target)) return target;
  const started = Date.now();
  console.log(
    `netlease: building ${program.name} ${program.version} from the Go module proxy (once; cached in ${binDir(program)})`,
  );
  const staging = `${binDir(program)}.partial`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  if (program.install) {
    const ldflags = program.ldflags ?? '-s -w';
    go(
      ['install', '-trimpath', `-ldflags=${ldflags}`, `${program.install}@${program.version}`],
      cacheRoot(),
      {
        GOBIN: staging,
        GOFLAGS: '',
      },
    );
  } else {
    buildWrapper(program, join(staging, program.name));
  }
  rmSync(binDir(program), { recursive: true, force: true });
  renameSync(staging, binDir(program));
  console.log(`netlease: built ${program.name} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return target;
}

if (require.main === module) {
  const names = process.argv.slice(2);
  for (const name of names.length ? names : DEFAULT_PROGRAMS) {
    const program = PROGRAMS.find((p) => p.name === name);
    if (!program)
      throw new Error(`unknown program ${name}; known: ${PROGRAMS.map((p) => p.name).join(', ')}`);
    ensureProgram(program);
  }
}
