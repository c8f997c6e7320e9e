import { decideNode, decidePod, nodeEventAsks } from '../../domain/cluster-decisions';
import { PodSchema, podFact, type PodFact } from '../../domain/k8s';

const lease = { podUid: 'uid-1', podRef: 'ns/web-0', phase: 'Active' };
const pod = (over: Partial<PodFact> = {}): PodFact => ({
  uid: 'uid-1',
  namespace: 'ns',
  name: 'web-0',
  nodeName: 'n1',
  phase: 'Pending',
  resourceVersion: '7',
  terminating: false,
  hostNetwork: false,
  ...over,
});

describe('decidePod', () => {
  test('a pod that is gone releases its lease', () => {
    expect(decidePod(lease, undefined)).toEqual({
      action: 'release',
      reason: 'pod ns/web-0 (uid uid-1) no longer exists',
    });
  });

  test('a pod recreated under the same name is another pod', () => {
    expect(decidePod(lease, pod({ uid: 'uid-2' }))).toMatchObject({ action: 'release' });
  });

  test.each(['Succeeded', 'Failed'])('a %s pod releases its lease, even while Terminating', (phase) => {
    expect(decidePod(lease, pod({ phase, terminating: true }))).toEqual({
      action: 'release',
      reason: `pod ns/web-0 is ${phase}`,
    });
  });

  test.each(['Pending', 'Unknown', 'Running'])(
    'a %s pod that exists is never released (seed 001)',
    (phase) => {
      for (const leasePhase of [
        'Producing',
        'Produced',
        'Active',
        'Stalled',
        'ActivationFailed',
        'Running',
      ]) {
        expect(decidePod({ ...lease, phase: leasePhase }, pod({ phase })).action).not.toBe('release');
        expect(decidePod({ ...lease, phase: leasePhase }, pod({ phase, terminating: true })).action).not.toBe(
          'release',
        );
      }
    },
  );

  test('a Running pod is confirmed to leases that have not seen it, and only to those', () => {
    for (const phase of ['Producing', 'Produced', 'Consumed', 'Activating', 'Active', 'Stalled'])
      expect(decidePod({ ...lease, phase }, pod({ phase: 'Running' }))).toEqual({ action: 'confirmRunning' });
    for (const phase of ['Running', 'ActivationFailed', 'Releasing'])
      expect(decidePod({ ...lease, phase }, pod({ phase: 'Running' })).action).toBe('keep');
  });

  test('a lease already releasing is sent nothing: its pod gone, terminal, recreated or Running', () => {
    for (const phase of ['Releasing', 'Released'])
      for (const seen of [
        undefined,
        pod({ phase: 'Failed' }),
        pod({ uid: 'uid-2' }),
        pod({ phase: 'Running' }),
      ])
        expect(decidePod({ ...lease, phase }, seen)).toEqual({
          action: 'keep',
          why: 'lease is already releasing',
        });
  });

  test('a Terminating pod is kept, and says so', () => {
    expect(decidePod(lease, pod({ terminating: true }))).toEqual({
      action: 'keep',
      why: 'pod is terminating',
    });
  });
});

describe('decideNode', () => {
  test('same incarnation: nothing to do, Terminating or not', () => {
    expect(decideNode('u1', 'u1')).toEqual({});
  });
  test('gone: the known incarnation is deleted', () => {
    expect(decideNode('u1', undefined)).toEqual({ deleted: 'u1' });
  });
  test('replaced under the same name: the old one is deleted, the new one observed', () => {
    expect(decideNode('u1', 'u2')).toEqual({ deleted: 'u1', observed: 'u2' });
  });
  test('nothing known yet: the live one is observed', () => {
    expect(decideNode(undefined, 'u2')).toEqual({ observed: 'u2' });
    expect(decideNode(undefined, undefined)).toEqual({});
  });
});

describe('nodeEventAsks: whether a watched Node is worth a quorum read', () => {
  test('the incarnation the node workflow holds, watched alive: nothing to tell', () => {
    expect(nodeEventAsks('u1', { uid: 'u1', deleted: false })).toBe(false);
  });
  test('its deletion, or another UID under the name: worth a read', () => {
    expect(nodeEventAsks('u1', { uid: 'u1', deleted: true })).toBe(true);
    expect(nodeEventAsks('u1', { uid: 'u2', deleted: false })).toBe(true);
    expect(nodeEventAsks('', { uid: 'u2', deleted: false })).toBe(true);
  });
  test('the deletion of an incarnation it does not hold (retired or never seen): nothing to tell', () => {
    expect(nodeEventAsks('u2', { uid: 'u1', deleted: true })).toBe(false);
    expect(nodeEventAsks('', { uid: 'u1', deleted: true })).toBe(false);
  });
});

describe('Kubernetes objects as @kubernetes/client-node returns them', () => {
  const raw = { metadata: { name: 'web-0', namespace: 'ns', uid: 'uid-1', resourceVersion: '9' } };
  test('deletionTimestamp as a Date (typed calls) and as a string (watch events)', () => {
    const when = new Date('2026-11-23T10:00:00Z');
    const typed = podFact(
      PodSchema.parse({ ...raw, metadata: { ...raw.metadata, deletionTimestamp: when } }),
    );
    const watched = podFact(
      PodSchema.parse({ ...raw, metadata: { ...raw.metadata, deletionTimestamp: when.toISOString() } }),
    );
    expect(typed.terminating).toBe(true);
    expect(watched).toEqual(typed);
    expect(podFact(PodSchema.parse(raw)).terminating).toBe(false);
  });
  test('other timestamps the client returns as Dates are ignored', () => {
    const pod = {
      ...raw,
      metadata: { ...raw.metadata, creationTimestamp: new Date(), managedFields: [{ time: new Date() }] },
      status: { phase: 'Running', startTime: new Date(), conditions: [{ lastTransitionTime: new Date() }] },
    };
    expect(podFact(PodSchema.parse(pod)).phase).toBe('Running');
  });
});
