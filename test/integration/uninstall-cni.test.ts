// uninstall-cni, the node agent's preStop: the files it removes (netlease's conflist first, then
// the shim, nothing else) in temporary directories standing in for the host's, and what it reads
// of its DaemonSet on the real kube-apiserver: there, being deleted, gone, or no longer readable by
// the pod's service account (helm uninstall deletes the account and its Role with the DaemonSet).
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectKube, type KubeClients } from '../../kubernetes/kube';
import { daemonSetState, uninstall } from '../../worker/agent/uninstall-cni';
import { kubeconfigPath } from '../harness/kube';
import { uniqueName } from '../harness/temporal';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'netlease-uninstall-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const netleaseConflist = {
  cniVersion: '1.0.0',
  name: 'netlease',
  plugins: [{ type: 'loopback' }, { type: 'netlease' }],
};

test('removes netlease conflist and shim, and leaves every other file', () => {
  writeFileSync(join(dir, '10-netlease.conflist'), JSON.stringify(netleaseConflist));
  writeFileSync(join(dir, '20-other.conflist'), '{}');
  writeFileSync(join(dir, 'netlease'), 'shim');
  writeFileSync(join(dir, 'loopback'), 'plugin');
  const lines: string[] = [];
  uninstall({ binDir: dir, confDir: dir, confName: '10-netlease.conflist' }, (l) => lines.push(l));
  expect(readdirSync(dir).sort()).toEqual(['20-other.conflist', 'loopback']);
  expect(lines).toEqual([`removed ${join(dir, '10-netlease.conflist')}`, `removed ${join(dir, 'netlease')}`]);
  // Again: nothing left to remove, and no error.
  uninstall({ binDir: dir, confDir: dir, confName: '10-netlease.conflist' }, () => undefined);
});

test('a conflist under netlease name that is not netlease is kept', () => {
  writeFileSync(join(dir, '10-netlease.conflist'), JSON.stringify({ plugins: [{ type: 'bridge' }] }));
  uninstall({ binDir: dir, confDir: dir, confName: '10-netlease.conflist' }, () => undefined);
  expect(readdirSync(dir)).toEqual(['10-netlease.conflist']);
});

describe('the DaemonSet as the pod reads it', () => {
  let clients: KubeClients;
  const namespace = uniqueName('uninstall');
  const name = 'netlease-node-agent';
  const env = process.env.KUBECONFIG;
  beforeAll(async () => {
    clients = await connectKube(kubeconfigPath());
    await clients.core.createNamespace({ body: { metadata: { name: namespace } } });
    process.env.KUBECONFIG = kubeconfigPath(); // connectKube() without a path reads it, as in-cluster
  });
  afterAll(async () => {
    if (env === undefined) delete process.env.KUBECONFIG;
    else process.env.KUBECONFIG = env;
    await clients.core.deleteNamespace({ name: namespace });
  });

  test('there, being deleted, then gone', async () => {
    const apps = clients.config.makeApiClient(clients.kube.AppsV1Api);
    const labels = { app: name };
    const container = { name: 'agent', image: 'netlease.local/netlease:x' };
    const body = {
      metadata: { name, finalizers: ['netlease.test/hold'] },
      spec: {
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [container] } },
      },
    };
    await apps.createNamespacedDaemonSet({ namespace, body });
    expect(await daemonSetState(namespace, name)).toBe('present');
    await apps.deleteNamespacedDaemonSet({ namespace, name });
    expect(await daemonSetState(namespace, name)).toBe('deleting');
    const patch = clients.kube.setHeaderOptions('Content-Type', clients.kube.PatchStrategy.MergePatch);
    await apps.patchNamespacedDaemonSet({ namespace, name, body: { metadata: { finalizers: null } } }, patch);
    expect(await daemonSetState(namespace, name)).toBe('gone');
  });

  test('a token that may not read it: revoked', async () => {
    const kubeconfig = join(dir, 'kubeconfig');
    const config = clients.config.exportConfig();
    const parsed = JSON.parse(config) as { users: Array<{ user: Record<string, unknown> }> };
    for (const user of parsed.users) user.user = { token: 'not-a-token' };
    writeFileSync(kubeconfig, JSON.stringify(parsed));
    process.env.KUBECONFIG = kubeconfig;
    try {
      expect(await daemonSetState(namespace, name)).toBe('revoked');
    } finally {
      process.env.KUBECONFIG = kubeconfigPath();
    }
  });
});
