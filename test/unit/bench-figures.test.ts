// The bench's whole-pod-lifecycle figures: a row is charged only its own processes (the others are
// shown, not summed), the API's share is apiserver + etcd, and rounds add up before dividing.
import {
  apiPerLifecycle,
  cpuPerLifecycle,
  lifecycleBreakdown,
  lifecyclesPerSecond,
  mergedLifecycles,
  type Lifecycles,
} from '../bench/figures';

const round = (lifecycles: number, seconds: number, cpu: Record<string, number>): Lifecycles => ({
  label: 'host-local',
  lifecycles,
  seconds,
  cpu,
  charged: ['executables', 'apiserver', 'etcd'],
  latencies: [lifecycles],
  unready: 0,
  unreleased: 1,
});

const first = round(10, 2, { executables: 100, apiserver: 150, etcd: 50, temporal: 70, control: 30 });
const second = round(30, 3, { executables: 300, apiserver: 250, etcd: 50, temporal: 10, control: 10 });

test('CPU per lifecycle sums the charged processes only', () => {
  expect(cpuPerLifecycle(first)).toBe((100 + 150 + 50) / 10);
  expect(apiPerLifecycle(first)).toBe((150 + 50) / 10);
});

test('the processes a row is not charged are shown apart', () => {
  expect(lifecycleBreakdown(first)).toBe(
    'host-local: executables 10, apiserver 15, etcd 5.0; not charged: temporal 7.0, control 3.0',
  );
});

test('rounds add up before the division', () => {
  const both = mergedLifecycles(first, second);
  expect(both.lifecycles).toBe(40);
  expect(lifecyclesPerSecond(both)).toBe(40 / 5);
  expect(cpuPerLifecycle(both)).toBe((400 + 400 + 100) / 40);
  expect(both.latencies).toEqual([10, 30]);
  expect(both.unreleased).toBe(2);
});
