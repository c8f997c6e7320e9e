// GET /metrics: this process's netlease_* metrics (prom-client, plus its process_* and nodejs_*
// defaults) followed by the Temporal SDK's own metrics (temporal_*), which Core serves on a
// loopback port of its own: one scrape target per process.
import { createServer, type Server } from 'node:http';
import { collectDefaultMetrics, type Registry } from 'prom-client';
import { errorMessage, type Log } from './log';

export interface MetricsServerOptions {
  host: string;
  port: number;
  registry: Registry;
  /** Core's Prometheus exporter (Runtime telemetryOptions), appended to each scrape. */
  temporalMetricsUrl?: string;
  log: Log;
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

const CORE_TIMEOUT_MS = 2000;

/** prom-client defaults that are gauges named *_total, which `promtool check metrics` rejects. */
const MISNAMED_DEFAULTS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/** Core's exposition, or a comment saying why it is missing (the scrape still succeeds). */
async function coreMetrics(url: string, log: Log): Promise<string> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(CORE_TIMEOUT_MS) });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const text = await response.text();
    return text.endsWith('\n') || text === '' ? text : `${text}\n`;
  } catch (err) {
    log.warn({ url, error: errorMessage(err) }, 'temporal SDK metrics unavailable');
    return '';
  }
}

export async function serveMetrics(options: MetricsServerOptions): Promise<MetricsServer> {
  const { registry, log } = options;
  collectDefaultMetrics({ register: registry });
  for (const name of MISNAMED_DEFAULTS) registry.removeSingleMetric(name);
  const server: Server = createServer((request, response) => {
    void (async () => {
      if (request.method !== 'GET' || !request.url?.startsWith('/metrics')) {
        response.writeHead(404, { 'content-type': 'text/plain' }).end('GET /metrics\n');
        return;
      }
      try {
        const own = await registry.metrics();
        const core = options.temporalMetricsUrl ? await coreMetrics(options.temporalMetricsUrl, log) : '';
        response.writeHead(200, { 'content-type': registry.contentType }).end(own + core);
      } catch (err) {
        response.writeHead(500, { 'content-type': 'text/plain' }).end(`${errorMessage(err)}\n`);
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
