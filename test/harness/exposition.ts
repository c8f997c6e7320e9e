// Reading a Prometheus text exposition in tests: the value of one series.
export async function scrape(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (!response.ok) throw new Error(`GET /metrics on ${port}: HTTP ${response.status}`);
  return response.text();
}

/** The value of `name{labels}` (labels matched as a subset), or undefined when absent. */
export function sampleValue(
  exposition: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const line of exposition.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [
        m[1],
        m[2],
      ]),
    );
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(match[3]);
  }
  return undefined;
}

/** The sum of every series of `name` whose labels include `labels`. */
export function sampleSum(exposition: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of exposition.split('\n')) {
    if (line.startsWith('#') || !line.startsWith(name)) continue;
    const value = sampleValue(line, name, labels);
    if (value !== undefined) sum += value;
  }
  return sum;
}
