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

test("the watch Lease's name is a DNS subdomain of its own for every task queue", () => {
  const subdomain = /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/;
  const names = [
    'netlease-control',
    'Control',
    'control',
    'a_b',
    'a-b',
    'a..b',
    'x.-y',
    '',
    'q'.repeat(300),
  ].map(watchLeaseName);
  for (const name of names) {
    expect(name).toMatch(subdomain);
    expect(name.length).toBeLessThanOrEqual(253);
  }
  expect(new Set(names).size).toBe(names.length);
  expect(names[0]).toMatch(/^netlease-watch-netlease-control-[0-9a-f]{8}$/);
  expect(watchLeaseName('netlease-control')).toBe(names[0]); // stable
});
