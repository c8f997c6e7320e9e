// Stand-in for kubectl against `npm start`'s local cluster (which has no kubelet):
//   node dist/tools/demo-pod.js create <name>    create a pod bound to this machine, print the ADD
//   node dist/tools/demo-pod.js running <name>   set its status.phase to Running
//   node dist/tools/demo-pod.js delete <name>    delete it (grace period 0)
import { join } from 'node:path';
import { hostNodeName } from '../kubernetes/node-name';
import { connectKube, kubeApiError, kubeCall, type KubeCallOptions } from '../kubernetes/kube';
import { errorMessage } from '../observability/log';

// npm start's local cluster, in its state directory (NETLEASE_STATE_DIR moves it, as for npm start).
const stateDir = process.env.NETLEASE_STATE_DIR ?? join(__dirname, '..', '..', '.netlease');
const kubeconfig = process.env.KUBECONFIG ?? join(stateDir, 'kube', 'kubeconfig');
const namespace = 'default';

async function main(): Promise<void> {
  const [verb, name] = process.argv.slice(2);
  if (!verb || !name) throw new Error('usage: demo-pod create|running|delete <name>');
  const { core, timeouts } = await connectKube(kubeconfig);
  const call = <T>(what: string, request: (options: KubeCallOptions) => Promise<T>) =>
    kubeCall(`${what} pod ${namespace}/${name}`, timeouts.callSeconds * 1000, request);
  if (verb === 'create') {
    const body = {
      metadata: { name },
      spec: { nodeName: hostNodeName(), containers: [{ name: 'c', image: 'registry.invalid/pause:1' }] },
    };
    const pod = await call('creating', (options) => core.createNamespacedPod({ namespace, body }, options));
    const uid = pod.metadata?.uid ?? '';
    console.log(`pod ${namespace}/${name} uid ${uid} on node ${hostNodeName()}. Call the shim:\n`);
    console.log(
      `  CNI_COMMAND=ADD CNI_CONTAINERID=${name}-1 CNI_NETNS=/var/run/netns/${name} CNI_IFNAME=eth0 \\`,
    );
    console.log(`  CNI_ARGS='K8S_POD_NAMESPACE=${namespace};K8S_POD_NAME=${name};K8S_POD_UID=${uid}' \\`);
    console.log('    ./bin/netlease < deploy/dev/netconf.json');
  } else if (verb === 'running') {
    const pod = await call('reading', (options) =>
      core.readNamespacedPodStatus({ name, namespace }, options),
    );
    pod.status = { ...pod.status, phase: 'Running' };
    await call('updating', (options) =>
      core.replaceNamespacedPodStatus({ name, namespace, body: pod }, options),
    );
    console.log(`pod ${namespace}/${name} is Running`);
  } else if (verb === 'delete') {
    await call('deleting', (options) =>
      core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 }, options),
    );
    console.log(`pod ${namespace}/${name} deleted`);
  } else {
    throw new Error(`unknown verb ${verb}`);
  }
}

main().catch((err: unknown) => {
  console.error(`demo-pod: ${errorMessage(kubeApiError(err))}`);
  process.exit(1);
});
