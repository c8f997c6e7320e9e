// How the benchmarks summarise a set of latencies.
export const percentile = (values: number[], p: number): number =>
  [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) * p)] ?? NaN;

export const p50p95 = (values: number[]): string =>
  `p50 ${percentile(values, 0.5)} ms, p95 ${percentile(values, 0.95)} ms`;
