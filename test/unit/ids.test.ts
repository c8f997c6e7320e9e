// The lease's pod UID: the pod's own, or (no K8S_POD_UID: cnitool by hand) one the container stands for.
import { madeByHand, leasePodUid, leaseWorkflowId, watchLeaseName } from '../../domain/ids';

test("a pod's UID keys its lease; without one, the container id's first 64 characters do", () => {
  expect(leasePodUid('8d1c0f4e-uid', 'abc')).toBe('8d1c0f4e-uid');
  const containerId = 'f'.repeat(64) + 'tail';
  expect(leasePodUid(undefined, containerId)).toBe(`ctr-${'f'.repeat(64)}`);
  expect(leasePodUid('', 'abc')).toBe('ctr-abc');
  expect(leaseWorkflowId(leasePodUid(undefined, 'abc'), 'eth0')).toBe('lease/ctr-abc/eth0');
});

test('a container-keyed lease is told from a pod-keyed one', () => {
  expect(madeByHand(leasePodUid(undefined, 'abc'))).toBe(true);
  expect(madeByHand(leasePodUid('8d1c0f4e-uid', 'abc'))).toBe(false);
  expect(madeByHand('')).toBe(true);
});

test("the watch Lease's name is a DNS subdomain whatever the task queue is called", () => {
  expect(watchLeaseName('netlease-control')).toBe('netlease-watch-netlease-control');
  expect(watchLeaseName('Tq_Two Workers!')).toBe('netlease-watch-tq-two-workers');
  const long = watchLeaseName('q'.repeat(300));
  expect(long).toHaveLength(253);
  expect(long).toMatch(/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/);
});
