// Quorum reads reuse one TLS connection to the kube-apiserver: the client alone makes a new HTTPS
// agent per request, and a produce (one Node read each) paid a handshake every time.
import { Agent } from 'node:https';
import { connectKube } from '../../kubernetes/kube';
import { ClusterReader } from '../../kubernetes/cluster-reader';
import { kubeconfigPath } from '../harness/kube';

test('ten sequential node reads open no connection after the first', async () => {
  const clients = await connectKube(kubeconfigPath());
  const reader = new ClusterReader(clients.core);
  const connects = jest.spyOn(Agent.prototype, 'createConnection');
  await reader.nodeUid('no-such-node-warm-up');
  expect(connects).toHaveBeenCalledTimes(1);
  for (let i = 0; i < 10; i++) expect(await reader.nodeUid(`no-such-node-${i}`)).toBeUndefined();
  expect(connects).toHaveBeenCalledTimes(1);
  connects.mockRestore();
});
