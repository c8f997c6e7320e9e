// A real Kubernetes API for dev and tests: etcd + kube-apiserver on loopback, envtest-style (no
// controller-manager, scheduler or kubelet), token auth, a kubeconfig written for clients.
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { programPath } from './programs';
import { freePort, startTracked, stopPid, waitFor, type Tracked } from './processes';

export interface LocalKube {
  server: string;
  token: string;
  kubeconfig: string;
  pids: number[];
  processes: Tracked[];
  stop(): Promise<void>;
}

export interface LocalKubeOptions {
  /** Directory for etcd data, certificates and the kubeconfig (kept: state survives restarts). */
  dir: string;
  apiPort?: number;
  logFd?: number;
  /**
   * Pods get their service account's token (the ServiceAccount admission plugin), as netlease's
   * own pods need to read the API in-cluster. Off by default: without a controller-manager no
   * service account is ever made, and the plugin would refuse every pod.
   */
  serviceAccounts?: boolean;
}

function writeKubeconfig(path: string, server: string, token: string): void {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'netlease-local', cluster: { server, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'admin', user: { token } }],
    contexts: [{ name: 'netlease-local', context: { cluster: 'netlease-local', user: 'admin' } }],
    'current-context': 'netlease-local',
  };
  writeFileSync(path, JSON.stringify(config, null, 2));
}

/** GET with the admin token against the local apiserver (self-signed certificate). */
export function kubeGet(
  server: string,
  token: string,
  path: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${server}${path}`,
      { headers: { Authorization: `Bearer ${token}` }, rejectUnauthorized: false },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.setTimeout(5000, () => req.destroy(new Error('timeout')));
    req.end();
  });
}

export async function startLocalKube(options: LocalKubeOptions): Promise<LocalKube> {
  const dir = options.dir;
  for (const sub of ['etcd', 'certs']) mkdirSync(join(dir, sub), { recursive: true });
  const token = 'netlease-local-admin-token';
  writeFileSync(join(dir, 'tokens.csv'), `${token},admin,admin,"system:masters"\n`);
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeFileSync(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
  writeFileSync(join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));

  const out = options.logFd ?? 'ignore';
  const stdio: ['ignore', number | 'ignore', number | 'ignore'] = ['ignore', out, out];
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const etcd = startTracked(
    programPath('etcd'),
    [
      '--data-dir',
      join(dir, 'etcd'),
      '--listen-client-urls',
      `http://127.0.0.1:${clientPort}`,
      '--advertise-client-urls',
      `http://127.0.0.1:${clientPort}`,
      '--listen-peer-urls',
      `http://127.0.0.1:${peerPort}`,
      '--initial-advertise-peer-urls',
      `http://127.0.0.1:${peerPort}`,
      '--initial-cluster',
      `default=http://127.0.0.1:${peerPort}`,
      '--unsafe-no-fsync',
      '--log-level',
      'warn',
    ],
    { stdio },
  );
  const apiPort = options.apiPort ?? (await freePort());
  const apiserver = startTracked(
    programPath('kube-apiserver'),
    [
      `--etcd-servers=http://127.0.0.1:${clientPort}`,
      `--cert-dir=${join(dir, 'certs')}`,
      `--secure-port=${apiPort}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      '--service-cluster-ip-range=10.0.0.0/24',
      '--authorization-mode=RBAC',
      '--endpoint-reconciler-type=none',
      ...(options.serviceAccounts ? [] : ['--disable-admission-plugins=ServiceAccount']),
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      `--service-account-key-file=${join(dir, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
      '--service-account-issuer=https://netlease.local',
      '--allow-privileged=true',
      // A local node's Hostname resolves nowhere; its InternalIP is where its kubelet serves.
      '--kubelet-preferred-address-types=InternalIP',
      '--v=0',
    ],
    { stdio },
  );
  const server = `https://127.0.0.1:${apiPort}`;
  const kubeconfig = join(dir, 'kubeconfig');
  writeKubeconfig(kubeconfig, server, token);
  const processes = [apiserver, etcd];
  const local: LocalKube = {
    server,
    token,
    kubeconfig,
    pids: processes.map((p) => p.pid),
    processes,
    async stop() {
      for (const p of processes) await stopPid(p.pid);
    },
  };
  let exited = false;
  for (const p of processes) void p.exited.then(() => (exited = true));
  const ready = await waitFor(
    async () =>
      exited ||
      (await kubeGet(server, token, '/readyz').then(
        (r) => r.status === 200,
        () => false,
      )),
    120000,
    250,
  );
  if (!ready || exited) {
    await local.stop();
    throw new Error(`kube-apiserver on ${server} did not become ready${exited ? ' (a process exited)' : ''}`);
  }
  return local;
}
