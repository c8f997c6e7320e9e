// The pool of an ADD (cni/pool-choice) when the agent cannot read the pod's facts from the
// Kubernetes API: the ADD says so (error 11, the runtime asks again), naming the pod and the API's
// words, not "Temporal did not answer" (an agent whose RBAC lacked namespaces said that).
import { Client } from '@temporalio/client';
import { chosenTerms } from '../../cni/pool-choice';
import { CniError } from '../../cni/errors';

const forbidden = 'kubernetes 403 Forbidden: namespaces "shop" is forbidden';
const pod = { podNamespace: 'shop', podName: 'web-0', podUid: 'uid-1', nodeName: 'n1' };

test('facts the API refuses: error 11 naming the pod and the API, before Temporal is asked', async () => {
  const client = new Client(); // lazy: never connected, as selection fails before the pools are read
  const facts = { forPod: () => Promise.reject(new Error(forbidden)) };
  const chosen = chosenTerms(client, 'tq', facts, pod, undefined);
  await expect(chosen).rejects.toBeInstanceOf(CniError);
  await expect(chosen).rejects.toMatchObject({
    code: 11,
    message: `pool selection cannot read pod shop/web-0, its namespace or node n1 from the Kubernetes API: ${forbidden}`,
  });
});
