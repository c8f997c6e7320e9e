// Prometheus from Debian's `prometheus` package (tools/bootstrap.sh installs it, its service kept
// off): promtool to check an exposition, and a real server started by PID to scrape our ports.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  freePort,
  runToEnd,
  startTracked,
  stopPid,
  type Finished,
  type Tracked,
} from '../../tools/processes';

export const PROMTOOL = '/usr/bin/promtool';
export const PROMETHEUS = '/usr/bin/prometheus';

/** `promtool check metrics` on an exposition (stdin). */
export const promtoolCheck = (exposition: string): Promise<Finished> =>
  runToEnd(PROMTOOL, ['check', 'metrics'], { input: exposition, env: { PATH: process.env.PATH } });

export interface PrometheusServer extends Tracked {
  url: string;
  output(): string;
  /** GET /api/v1/query: the result vector (empty on any error). */
  query(expr: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>;
  stop(): Promise<void>;
}

/** A Prometheus scraping `targets` (host:port) every second, its storage in a temp dir. */
export async function startPrometheus(targets: string[]): Promise<PrometheusServer> {
  const dir = mkdtempSync(join(tmpdir(), 'netlease-prom-'));
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      'scrape_configs:',
      '  - job_name: netlease',
      `    static_configs: [{ targets: [${targets.map((t) => `'${t}'`).join(', ')}] }]`,
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const tracked = startTracked(
    PROMETHEUS,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let text = '';
  tracked.child.stdout?.on('data', (d: Buffer) => (text += d.toString()));
  tracked.child.stderr?.on('data', (d: Buffer) => (text += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  return {
    ...tracked,
    url,
    output: () => text,
    async query(expr) {
      try {
        const response = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
        const body = (await response.json()) as {
          status?: string;
          data?: { result?: Array<{ metric: Record<string, string>; value: [number, string] }> };
        };
        return body.status === 'success' ? (body.data?.result ?? []) : [];
      } catch {
        return [];
      }
    },
    async stop() {
      await stopPid(tracked.pid);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
