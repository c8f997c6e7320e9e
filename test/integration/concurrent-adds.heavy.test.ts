// 200 concurrent ADDs through the real shim executable across 5 nodes.
import { randomUUID } from 'node:crypto';
import { contains, parseAddress, parsePrefix } from '../../domain/cidr';
import { nodeWorkflowId } from '../../domain/ids';
import { nodeStateQuery } from '../../workflows/node-messages';
import { CniResultSchema } from '../harness/cni-result';
import { netconf } from '../harness/netconf';
import { expectReplayed } from '../harness/replay';
import { inBatches, runShim } from '../harness/shim';
import { uniqueName, withControlWorker } from '../harness/temporal';

const EXCLUDED = ['198.18.0.0/29', '198.18.0.40', 'fd00:18::10/124'];
const ctx = withControlWorker('concurrent', (taskQueue) => ({
  pools: [
    {
      name: taskQueue,
      cidrs: ['198.18.0.0/22', 'fd00:18::/112'],
      blockSize: { ipv4: 27, ipv6: 123 },
      exclude: EXCLUDED,
    },
  ],
}));

test('200 concurrent ADDs on 5 nodes: unique addresses inside each node block, none excluded', async () => {
  const nodes = Array.from({ length: 5 }, () => uniqueName('node'));
  const calls = Array.from({ length: 200 }, (_, i) => ({ node: nodes[i % 5] as string, uid: randomUUID() }));
  // 25 shim processes in flight (each a Node process of ~75 MB, ~0.45 s CPU to start): 5 ADDs race
  // on every node at any time; more only starves the worker of CPU on a 2-core machine.
  const outcomes = await inBatches(
    calls.map(
      (c) => () =>
        runShim({
          command: 'ADD',
          containerId: `ctr-${c.uid}`,
          netns: `/var/run/netns/${c.uid}`,
          ifName: 'eth0',
          args: { K8S_POD_NAMESPACE: 'load', K8S_POD_NAME: `p-${c.uid.slice(0, 8)}`, K8S_POD_UID: c.uid },
          stdin: { ...netconf({ taskQueue: ctx.temporal.taskQueue, nodeName: c.node }), timeoutSeconds: 300 },
        }),
    ),
    25,
  );
  const failures = outcomes.filter((o) => o.exitCode !== 0).map((o) => o.stdout + o.stderr);
  expect(failures).toEqual([]);
  const results = outcomes.map((o) => CniResultSchema.parse(o.json));

  const addresses = results.flatMap((r) => r.ips.map((ip) => ip.address.split('/')[0] as string));
  expect(addresses).toHaveLength(400);
  expect(new Set(addresses).size).toBe(400);

  const excluded = EXCLUDED.map((text) =>
    text.includes('/') ? parsePrefix(text) : parsePrefix(`${text}/32`),
  );
  for (const address of addresses) {
    const { family, value } = parseAddress(address);
    expect(excluded.filter((prefix) => contains(prefix, family, value))).toEqual([]);
  }

  for (const node of nodes) {
    const state = await ctx.temporal.client.workflow.getHandle(nodeWorkflowId(node)).query(nodeStateQuery);
    const held = state.tables[ctx.temporal.taskQueue]?.blocks ?? [];
    const blocks = held.map((b) => parsePrefix(b.cidr));
    // One block acquisition at a time per node: the only block that holds nothing is one acquired
    // ahead of need, the newest of its family.
    const used = new Set(
      Object.values(state.tables[ctx.temporal.taskQueue]?.allocations ?? {}).map((a) => a.block),
    );
    const ahead = new Set([4, 6].map((family) => held.filter((b) => b.family === family).at(-1)?.cidr));
    expect(held.filter((b) => !used.has(b.cidr) && !ahead.has(b.cidr))).toEqual([]);
    const mine = results.filter((_, i) => calls[i]?.node === node);
    expect(mine).toHaveLength(40);
    for (const result of mine) {
      for (const ip of result.ips) {
        const { family, value } = parseAddress(ip.address.split('/')[0] as string);
        expect(blocks.some((block) => contains(block, family, value))).toBe(true);
        expect(ip.address.endsWith(family === 4 ? '/27' : '/123')).toBe(true);
      }
    }
  }
}, 600_000);

test('histories of this file replay without nondeterminism', async () => {
  await expectReplayed(ctx.temporal, 201);
});
