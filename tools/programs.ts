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
  /** A wrapper module requiring `module@version`, then `go build` of `pkg`. */
  wrapper?: { module: string; pkg: string; replaceStaging?: boolean };
  ldflags?: string;
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
];

export const DEFAULT_PROGRAMS = PROGRAMS.map((p) => p.name);

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

/** `replace k8s.io/x => k8s.io/x v0.Y.Z` for every staging module k8s.io/kubernetes points at locally. */
function stagingReplaces(module: string, version: string, cwd: string): string[] {
  const info = JSON.parse(go(['mod', 'download', '-json', `${module}@${version}`], cwd)) as { GoMod: string };
  const staging = [
    ...readFileSync(info.GoMod, 'utf8').matchAll(/^\s*(k8s\.io\/[\w.-]+)\s+=>\s+\.\/staging\//gm),
  ];
  const minor = version.replace(/^v1\./, 'v0.');
  return staging.map((m) => `replace ${m[1]} => ${m[1]} ${minor}`);
}

function buildWrapper(program: Program, out: string): void {
  const wrapper = program.wrapper;
  if (!wrapper) return;
  const dir = join(cacheRoot(), 'src', `${program.name}-${program.version}`);
  mkdirSync(dir, { recursive: true });
  const replaces = wrapper.replaceStaging ? stagingReplaces(wrapper.module, program.version, dir) : [];
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
