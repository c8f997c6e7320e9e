// temporal.tls for every process: a control worker, a node agent and the shim reach Temporal only
// through a real TLS-terminating gRPC proxy (nginx) that demands a client certificate.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { liveNodeAgents } from '../../cni/status';
import type { TemporalConnection } from '../../domain/config';
import { leaseWorkflowId } from '../../domain/ids';
import { globalAddresses } from '../../kernel/links';
import { connectClient, connectWorkerConnection } from '../../temporal/connection';
import { leaseStateQuery } from '../../workflows/lease-messages';
import { netconf } from '../harness/netconf';
import { makeNetns } from '../harness/netns';
import { startNodeAgentProcess, withNodeAgent } from '../harness/node-agent';
import { runShim } from '../harness/shim';
import { withTlsProxy } from '../harness/tls-proxy';
import { expectReplayed } from '../harness/replay';
import { uniqueName, withControlWorker } from '../harness/temporal';
import { waitForValue } from '../harness/wait';

const node = uniqueName('node');
const tls = withTlsProxy(); // first: the workers below connect through it
type Tls = NonNullable<TemporalConnection['tls']>;
const through = (overrides: Partial<Tls> = {}) => {
  const { ca, clientCert, clientKey } = tls.proxy.files;
  const files = { serverRootCACertificateFile: ca, clientCertFile: clientCert, clientKeyFile: clientKey };
  return { address: tls.proxy.address, tls: { ...files, ...overrides } };
};
const ctx = withControlWorker('mtls', (taskQueue) => ({ temporal: { ...through(), taskQueue } }));
// The agent names the server by its certificate's DNS name rather than the IP it dials.
const dataplane = withNodeAgent(node, () => through({ serverNameOverride: 'localhost' }));

const settings = (overrides: Partial<Tls>): TemporalConnection => ({
  ...through(overrides),
  namespace: 'default',
  taskQueue: ctx.temporal.taskQueue,
});

function ptpAdd(uid: string, netns: string, temporal: object) {
  return runShim({
    command: 'ADD',
    containerId: `ctr-${uid}`,
    netns,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: 'mtls', K8S_POD_NAME: `pod-${uid.slice(0, 8)}`, K8S_POD_UID: uid },
    stdin: netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: node, extra: { mode: 'ptp', temporal } }),
  });
}

/** nginx's access log once it has every line (it may log a request just after answering it). */
const proxyLogShows = (lines: RegExp[]): Promise<string> =>
  waitForValue(
    async () => readFileSync(`${tls.proxy.dir}/access.log`, 'utf8'),
    (text) => lines.every((line) => line.test(text)),
    5000,
  );

/** Whether Temporal answers a call made with these settings; the connection is closed either way. */
async function answers(connection: TemporalConnection): Promise<boolean> {
  const client = await connectClient(connection, { connectTimeoutMs: 5000 }).catch(() => undefined);
  if (!client) return false;
  try {
    await client.workflowService.getSystemInfo({});
    return true;
  } catch {
    return false;
  } finally {
    await client.connection.close();
  }
}

test('through the mTLS proxy only: a ptp ADD by bin/netlease makes the lease Active; the node agent polls', async () => {
  const uid = randomUUID();
  const pod = await makeNetns('pod');
  const added = await ptpAdd(uid, pod.path, { ...through(), taskQueue: ctx.temporal.taskQueue });
  expect(added.stderr).toBe('');
  expect(added.json).not.toHaveProperty('code');
  const ips = (added.json?.ips ?? []) as Array<{ address: string }>;
  const eth0 = (await pod.links()).find((l) => l.ifname === 'eth0');
  expect(eth0 && globalAddresses(eth0)).toEqual(expect.arrayContaining(ips.map((i) => i.address)));
  const state = await ctx.temporal.client.workflow
    .getHandle(leaseWorkflowId(uid, 'eth0'))
    .query(leaseStateQuery);
  expect(state.phase).toBe('Active');
  expect(await liveNodeAgents(ctx.temporal.client, 'default', node)).toHaveLength(1);

  // nginx saw every role's calls: the shim's update, workflow and activity task completions.
  const calls = ['ExecuteMultiOperation', 'RespondWorkflowTaskCompleted', 'RespondActivityTaskCompleted'];
  const log = await proxyLogShows(
    calls.map((method) => new RegExp(`WorkflowService/${method} HTTP/2.0" 200`)),
  );
  for (const method of calls)
    expect(log).toContain(`/temporal.api.workflowservice.v1.WorkflowService/${method}`);
});

test('a client without a client certificate is refused, one with it is answered', async () => {
  const withoutCert = settings({ clientCertFile: undefined, clientKeyFile: undefined });
  expect(await answers(withoutCert)).toBe(false);
  await expect(connectWorkerConnection(withoutCert)).rejects.toThrow(/400 Bad Request/);
  // nginx answered both with 400 (no required SSL certificate), before reaching Temporal.
  const refused = ['grpc-node-js', 'tonic'].map(
    (agent) => new RegExp(`GetSystemInfo HTTP/2.0" 400 .*"${agent}/`),
  );
  const log = await proxyLogShows(refused);
  for (const line of refused) expect(log).toMatch(line);
  expect(await answers(settings({}))).toBe(true);
});

test('an unreadable TLS file: the shim fails with CNI error 5 naming the field; the node agent does not start', async () => {
  const pod = await makeNetns('pod');
  const missing = `${tls.proxy.dir}/missing.pem`;
  const shim = await ptpAdd(randomUUID(), pod.path, through({ clientCertFile: missing }));
  expect(shim.json).toMatchObject({ code: 5, msg: expect.stringContaining('temporal.tls.clientCertFile') });

  const agent = startNodeAgentProcess(
    uniqueName('node'),
    dataplane.host.name,
    {},
    through({ clientKeyFile: missing }),
  );
  expect(await agent.exited).toBe(1);
  // The agent's last word is one JSON log line naming the field and the file.
  const failure = agent
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg?: string; error?: string })
    .find((line) => line.msg === 'node agent failed');
  expect(failure?.error).toMatch(new RegExp(`cannot read temporal\\.tls\\.clientKeyFile "${missing}"`));
});

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(ctx.temporal, 1);
});
