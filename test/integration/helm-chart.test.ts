// The Helm chart (deploy/helm/netlease) with the pinned helm: it lints, the plain manifests under
// deploy/ are its rendering, and its values reach what each process reads: the configs it renders
// parse with the workers' own schemas, TLS names the mounted Secret's files everywhere, and nodes
// that share one host filesystem get directories of their own.
import type { V1DaemonSet, V1Deployment } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { NetleaseConfigSchema, NodeAgentConfigSchema } from '../../domain/config';
import { CHART, helm, staleManifests } from '../../tools/render-manifests';
import { NetworkSchema } from '../../worker/agent/install-cni';
import { expandEnvironment } from '../../worker/config-file';

const ENV = { NETLEASE_NODE_NAME: 'node-a', NETLEASE_POD_IP: '198.19.255.1' };
const ObjectSchema = z.looseObject({ kind: z.string(), metadata: z.looseObject({ name: z.string() }) });

function render(set: Record<string, string> = {}) {
  const sets = Object.entries(set).flatMap(([key, value]) => ['--set', `${key}=${value}`]);
  const text = helm(['template', 'netlease', CHART, '--namespace', 'netlease-system', ...sets]);
  const objects = parseAllDocuments(text)
    .map((d) => d.toJS() as unknown)
    .filter((o) => o !== null)
    .map((o) => ObjectSchema.parse(o));
  const find = (kind: string, name: string) => {
    const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
    if (!found) throw new Error(`no ${kind} ${name} rendered`);
    return found;
  };
  const data = (name: string) =>
    z.object({ data: z.record(z.string(), z.string()) }).parse(find('ConfigMap', name)).data;
  const file = (name: string, key: string) =>
    parseYaml(expandEnvironment(data(name)[key] ?? '', ENV, key)) as unknown;
  return {
    objects,
    control: NetleaseConfigSchema.parse(file('netlease-control', 'netlease.yaml')),
    agent: NodeAgentConfigSchema.parse(file('netlease-node-agent', 'node-agent.yaml')),
    network: z.object({ network: NetworkSchema }).parse(file('netlease-node-agent', 'install-cni.yaml'))
      .network,
    daemonSet: find('DaemonSet', 'netlease-node-agent') as V1DaemonSet,
    deployment: find('Deployment', 'netlease-control') as V1Deployment,
  };
}

test('helm lint --strict passes', () => {
  expect(helm(['lint', '--strict', CHART])).toContain('0 chart(s) failed');
});

test('the plain manifests under deploy/ are the chart rendered with its defaults', async () => {
  expect(await staleManifests()).toEqual([]);
});

test('the default values render configs the workers accept, agreeing on network, pool and Temporal', () => {
  const { control, agent, network, objects } = render();
  expect(objects.map((o) => o.kind)).not.toContain('Namespace'); // helm install --create-namespace
  expect(control.pools.map((p) => p.name)).toContain(network.pool);
  expect(agent.preProduce).toMatchObject({ network: network.name, mode: network.mode, pool: network.pool });
  expect([agent.temporal, network.temporal]).toEqual([control.temporal, control.temporal]);
});

test('values: Temporal address and TLS, pools, node-agent options, image', () => {
  const { control, agent, network, daemonSet, deployment } = render({
    'temporal.address': '127.0.0.1:7443',
    'temporal.tls.enabled': 'true',
    'temporal.tls.secretName': 'temporal-client',
    'temporal.tls.clientCertificate': 'true',
    'temporal.tls.serverNameOverride': 'temporal.local',
    'pools[0].name': 'pods',
    'pools[0].cidrs[0]': '198.19.0.0/22',
    'network.pool': 'pods',
    'nodeAgent.hostNetns': 'host-$(NETLEASE_NODE_NAME)',
    'nodeAgent.metrics.host': '$(NETLEASE_POD_IP)',
    'image.tag': '0.1.0-abc',
  });
  const tls = {
    serverRootCACertificateFile: '/etc/netlease/tls/ca.crt',
    clientCertFile: '/etc/netlease/tls/tls.crt',
    clientKeyFile: '/etc/netlease/tls/tls.key',
    serverNameOverride: 'temporal.local',
  };
  for (const temporal of [control.temporal, agent.temporal, network.temporal])
    expect(temporal).toMatchObject({ address: '127.0.0.1:7443', tls });
  expect(control.pools.map((p) => [p.name, p.cidrs[0]])).toEqual([['pods', '198.19.0.0/22']]);
  expect([agent.hostNetns, agent.metrics?.host, agent.preProduce?.pool]).toEqual([
    'host-node-a',
    '198.19.255.1',
    'pods',
  ]);
  for (const pod of [daemonSet.spec?.template.spec, deployment.spec?.template.spec]) {
    expect(pod?.volumes).toContainEqual({ name: 'temporal-tls', secret: { secretName: 'temporal-client' } });
    for (const c of pod?.containers ?? []) {
      expect(c.image).toBe('netlease.local/netlease:0.1.0-abc');
      expect(c.volumeMounts).toContainEqual({
        name: 'temporal-tls',
        mountPath: '/etc/netlease/tls',
        readOnly: true,
      });
    }
  }
});

test('poolObjects: the control worker reads its pools from NetleasePool objects, none from its file, and the node agents their selectors', () => {
  const { control, agent, objects } = render({ poolObjects: 'true' });
  expect([control.pools, control.kubernetes?.poolObjects]).toEqual([[], true]);
  expect(agent.kubernetes?.poolObjects).toBe(true);
  const agentRole = objects.find(
    (o) => o.kind === 'ClusterRole' && o.metadata.name === 'netlease-node-agent',
  );
  expect(agentRole).toMatchObject({
    rules: expect.arrayContaining([
      { apiGroups: ['netlease.io'], resources: ['netleasepools'], verbs: ['get', 'list', 'watch'] },
    ]),
  });
  expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toContain(
    'CustomResourceDefinition/netleasepools.netlease.io',
  );
  expect(render().control.kubernetes?.poolObjects).toBe(false);
  expect(render().agent.kubernetes?.poolObjects).toBe(false);
});

test('hostPaths.perNode: every host directory and the conflist paths are the node own', () => {
  const { daemonSet } = render({ 'hostPaths.perNode': 'true', 'hostPaths.run': '/srv/run' });
  const pod = daemonSet.spec?.template.spec;
  const hostVolumes = new Set(
    (pod?.volumes ?? []).filter((v) => v.hostPath && v.name !== 'netns').map((v) => v.name),
  );
  const mounts = [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])].flatMap(
    (c) => c.volumeMounts ?? [],
  );
  const ofHost = mounts.filter((m) => hostVolumes.has(m.name));
  expect(ofHost.length).toBeGreaterThanOrEqual(6);
  for (const mount of ofHost) expect(mount).toMatchObject({ subPathExpr: '$(NETLEASE_NODE_NAME)' });
  const init = pod?.initContainers?.find((c) => c.name === 'install-cni');
  expect(init?.command).toEqual(
    expect.arrayContaining(['--agent-socket', '/srv/run/$(NETLEASE_NODE_NAME)/cni.sock']),
  );
});
