// Taking turns by a coordination.k8s.io Lease against the real kube-apiserver: of several
// contenders one leads at a time; a holder that stops hands over at once; a holder SIGKILLed is
// taken over once its lease lapsed, not before; a holder that cannot reach the API stops leading
// before anyone may take over.
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { connectKube, type KubeClients } from '../../kubernetes/kube';
import { holdLeadership, type Leadership } from '../../kubernetes/leadership';
import { startTracked, stopPid, waitFor } from '../../tools/processes';
import {
  apiServerAddress,
  kubeconfigPath,
  kubeconfigThrough,
  testCluster,
  type TestCluster,
} from '../harness/kube';
import { tcpProxy } from '../harness/tcp-proxy';
import { uniqueName } from '../harness/temporal';

const DURATION_S = 3;
/** A holder renews three times a lease. */
const RENEW_MS = (DURATION_S * 1000) / 3;
let cluster: TestCluster;
const held: Leadership[] = [];
beforeAll(async () => (cluster = await testCluster('leadership')));
afterAll(async () => {
  await Promise.all(held.map((h) => h.stop()));
  await cluster?.close();
});

/** A contender in this process; `active` counts contenders leading at once across a test. */
function contender(
  clients: KubeClients,
  name: string,
  identity: string,
  active: { now: number; max: number },
) {
  let leads = 0;
  const leadership = holdLeadership(
    clients,
    { namespace: cluster.namespace, name, identity, durationSeconds: DURATION_S },
    {
      lead() {
        leads++;
        active.max = Math.max(active.max, ++active.now);
        return () => void active.now--;
      },
    },
  );
  held.push(leadership);
  return { leadership, leads: () => leads };
}

function leaseOf(name: string) {
  const api = cluster.clients.config.makeApiClient(cluster.clients.kube.CoordinationV1Api);
  return api.readNamespacedLease({ name, namespace: cluster.namespace });
}

const holderOf = async (name: string) => (await leaseOf(name)).spec?.holderIdentity;

test('one of three leads; a holder that stops hands over to another at once', async () => {
  const name = uniqueName('lease');
  const active = { now: 0, max: 0 };
  const all = ['a', 'b', 'c'].map((id) => ({ id, ...contender(cluster.clients, name, id, active) }));
  expect(await waitFor(() => all.some((c) => c.leadership.leading), 10_000)).toBe(true);
  const first = all.find((c) => c.leadership.leading);
  expect(await holderOf(name)).toBe(first?.id);
  // Two renewals later it still leads alone.
  const renewed = async () => (await leaseOf(name)).spec?.renewTime?.valueOf() ?? 0;
  const from = await renewed();
  expect(await waitFor(async () => (await renewed()) >= from + RENEW_MS * 2, DURATION_S * 1000 * 3)).toBe(
    true,
  );
  expect(all.filter((c) => c.leadership.leading).map((c) => c.id)).toEqual([first?.id]);
  const stoppedAt = performance.now();
  await first?.leadership.stop();
  expect(await waitFor(() => all.some((c) => c !== first && c.leadership.leading), 10_000)).toBe(true);
  // Handed back: the next did not wait for the lease to lapse.
  expect(performance.now() - stoppedAt).toBeLessThan(DURATION_S * 1000);
  const second = all.find((c) => c !== first && c.leadership.leading);
  expect(await holderOf(name)).toBe(second?.id);
  expect(active.max).toBe(1);
});

test('a SIGKILLed holder is taken over once its lease has lapsed, not before', async () => {
  const name = uniqueName('lease');
  const script = join(__dirname, '..', 'harness', 'leadership-contender.js');
  const args = [script, kubeconfigPath(), cluster.namespace, name, 'doomed', String(DURATION_S)];
  const doomed = startTracked(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  doomed.child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  try {
    expect(await waitFor(() => out.includes('leading'), 15_000)).toBe(true);
    const active = { now: 0, max: 0 };
    const heir = contender(cluster.clients, name, 'heir', active);
    const killedAt = performance.now();
    process.kill(doomed.pid, 'SIGKILL');
    expect(await waitFor(() => heir.leadership.leading, DURATION_S * 1000 * 4)).toBe(true);
    const waited = performance.now() - killedAt;
    expect(waited).toBeGreaterThanOrEqual(DURATION_S * 1000 * 0.9);
    expect(await holderOf(name)).toBe('heir');
    console.log(`SIGKILLed holder taken over after ${waited.toFixed(0)} ms (lease ${DURATION_S} s)`);
  } finally {
    await stopPid(doomed.pid);
  }
});

test('a holder cut off from the API stops leading before another may take over', async () => {
  const name = uniqueName('lease');
  const clients = await connectKube(kubeconfigPath());
  const active = { now: 0, max: 0 };
  const cut = contender(clients, name, 'cut', active);
  expect(await waitFor(() => cut.leadership.leading, 10_000)).toBe(true);
  // Its credentials stop working: every read and renewal is refused from now on.
  const user = clients.config.getCurrentUser() as { token?: string } | null;
  if (!user?.token) throw new Error('the test kubeconfig has no token to spoil');
  user.token = 'revoked';
  const cutAt = performance.now();
  const other = contender(cluster.clients, name, 'other', active);
  expect(await waitFor(() => !cut.leadership.leading, DURATION_S * 1000 * 2)).toBe(true);
  const stoppedAfter = performance.now() - cutAt;
  expect(await waitFor(() => other.leadership.leading, DURATION_S * 1000 * 4)).toBe(true);
  expect(stoppedAfter).toBeLessThan(DURATION_S * 1000);
  expect(active.max).toBe(1);
});

test('a holder whose API connection goes silent stops leading in time, and stops at once', async () => {
  const name = uniqueName('lease');
  const proxy = await tcpProxy(apiServerAddress());
  try {
    const active = { now: 0, max: 0 };
    const silent = contender(await connectKube(kubeconfigThrough(proxy.address)), name, 'silent', active);
    expect(await waitFor(() => silent.leadership.leading, 10_000)).toBe(true);
    proxy.stall(); // its keep-alive connection and any new one hang: no error ever comes
    const stalledAt = performance.now();
    const other = contender(cluster.clients, name, 'other', active);
    expect(await waitFor(() => !silent.leadership.leading, DURATION_S * 1000 * 2)).toBe(true);
    expect(performance.now() - stalledAt).toBeLessThan(DURATION_S * 1000);
    expect(await waitFor(() => other.leadership.leading, DURATION_S * 1000 * 4)).toBe(true);
    expect(active.max).toBe(1);
    const stopping = performance.now();
    await silent.leadership.stop();
    expect(performance.now() - stopping).toBeLessThan(DURATION_S * 1000);
  } finally {
    await proxy.close();
  }
});
