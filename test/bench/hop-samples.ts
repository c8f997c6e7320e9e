// One ADD and one DEL per netlease row, timed here and read back from the lease's and the node
// workflow's histories: the Temporal hops each call takes.
import type { Client } from '@temporalio/client';
import { leaseWorkflowId, nodeWorkflowId } from '../../domain/ids';
import { describeHops } from './hops';
import type { Plugin } from './plugins';
import { NODE } from './stack';

/** Client RPCs on each call's path, from cni/consume.ts, cni/offers.ts and cni/deactivate.ts. */
const rpcs = (plugin: Plugin) => ({
  ADD: plugin.label.includes('pre-produced')
    ? 'no RPC on its path (answered from the offer; the confirmAnswer update confirms it right after, and the DEL waits for that)'
    : '1 RPC (update-with-start)',
  DEL: '1 RPC (update)',
});

async function sample(client: Client, plugin: Plugin): Promise<string[]> {
  const pod = plugin.nextPod();
  const ids = [leaseWorkflowId(pod.uid, 'eth0'), nodeWorkflowId(NODE)];
  const t0 = Date.now();
  await plugin.call('ADD', pod);
  const t1 = Date.now();
  await plugin.call('DEL', pod);
  const t2 = Date.now();
  const RPCS = rpcs(plugin);
  return [
    `${plugin.label} ADD, ${RPCS.ADD}: ${await describeHops(client, ids, { from: t0, to: t1 })}`,
    `${plugin.label} DEL, ${RPCS.DEL}: ${await describeHops(client, ids, { from: t1, to: t2 })}`,
  ];
}

/** One ADD+DEL of each plugin given (each with a pod left for it). */
export async function hopSamples(client: Client, plugins: Array<Plugin | undefined>): Promise<string[]> {
  const lines: string[] = [];
  for (const plugin of plugins) if (plugin) lines.push(...(await sample(client, plugin)));
  return lines;
}
