// The control plane beside tools/kube-apiserver.ts for a cluster with real nodes: the real
// kube-controller-manager (StatefulSet, ReplicaSet, pod GC, node lifecycle, ...) and
// kube-scheduler, on loopback, with the apiserver's admin kubeconfig (a dev cluster: one identity
// for every component, system:masters; production gives each its own).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { LocalKube } from './kube-apiserver';
import { programPath } from './programs';
import { freePort, startTracked, type Tracked } from './processes';

export interface ControllersOptions {
  kube: LocalKube;
  /** startLocalKube's directory: its sa.key signs tokens, certs/apiserver.crt is the root CA. */
  kubeDir: string;
  /** Where the controllers keep their serving certificates. */
  dir: string;
  logFd?: number;
}

/** Flags both take: the cluster, delegated authn/authz, serving on loopback, no leader election. */
async function commonFlags(kubeconfig: string, certDir: string): Promise<string[]> {
  mkdirSync(certDir, { recursive: true });
  return [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${await freePort()}`,
    `--cert-dir=${certDir}`,
    '--leader-elect=false',
    '--profiling=false',
    '--v=1',
  ];
}

export async function startControllers(options: ControllersOptions): Promise<Tracked[]> {
  const { kube, kubeDir, dir } = options;
  const out = options.logFd ?? 'ignore';
  const stdio: ['ignore', number | 'ignore', number | 'ignore'] = ['ignore', out, out];
  const controllerManager = startTracked(
    programPath('kube-controller-manager'),
    [
      ...(await commonFlags(kube.kubeconfig, join(dir, 'controller-manager'))),
      `--service-account-private-key-file=${join(kubeDir, 'sa.key')}`,
      `--root-ca-file=${join(kubeDir, 'certs', 'apiserver.crt')}`,
      // Controllers act as the admin identity, not one service account each.
      '--use-service-account-credentials=false',
      // No cloud: no routes, no load balancers, no node CIDRs (netlease gives the addresses).
      '--allocate-node-cidrs=false',
      '--configure-cloud-routes=false',
    ],
    { stdio },
  );
  const scheduler = startTracked(
    programPath('kube-scheduler'),
    await commonFlags(kube.kubeconfig, join(dir, 'scheduler')),
    { stdio },
  );
  return [controllerManager, scheduler];
}
