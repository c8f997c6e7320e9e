// One complete list of a watched collection, page by page, in the watch's own wire form (the
// typed client's lists turn timestamps into Dates): where a watch starts (the list's
// resourceVersion) and which objects exist at that point. A watch reopened without a list cannot
// tell what was deleted while it was away; a list can (client-go's reflector does the same).
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent, request as httpsRequest, type RequestOptions } from 'node:https';
import { z } from 'zod';
import { kubeRefusal, within, type KubeClients } from './kube';

const PAGE = 500;

const ListPageSchema = z.object({
  metadata: z.object({ resourceVersion: z.string().min(1), continue: z.string().optional() }),
  items: z.array(z.unknown()).nullable(),
});

/**
 * Lists every object of `path` (with `query`'s selectors): `onItem` gets each, in pages of 500;
 * resolves to the resourceVersion the whole list is consistent at. Each page is bounded by
 * `listPageSeconds`; an expired continue token (410) fails the list, and the caller lists again.
 */
export async function listCollection(
  clients: KubeClients,
  path: string,
  query: Record<string, string>,
  onItem: (object: unknown) => void,
): Promise<string> {
  const options: RequestOptions = {};
  await clients.config.applyToHTTPSOptions(options);
  const pageMs = clients.timeouts.listPageSeconds * 1000;
  let resourceVersion = '';
  try {
    for (let token: string | undefined, number = 1; number === 1 || token; number++) {
      const url = pageUrl(clients, path, {
        ...query,
        limit: String(PAGE),
        ...(token && { continue: token }),
      });
      const page = ListPageSchema.parse(
        await within(getJson(url, options), pageMs, `listing ${path}, page ${number}`),
      );
      for (const item of page.items ?? []) onItem(item);
      resourceVersion ||= page.metadata.resourceVersion; // a continued list is the first page's snapshot
      token = page.metadata.continue || undefined;
    }
  } finally {
    if (options.agent instanceof Agent) options.agent.destroy();
  }
  return resourceVersion;
}

function pageUrl(clients: KubeClients, path: string, query: Record<string, string>): URL {
  const cluster = clients.config.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig names no current cluster');
  const url = new URL(cluster.server + path);
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
  return url;
}

/** GET `url` as JSON; a refusal as a KubeApiError carrying the server's Status. */
function getJson(url: URL, options: RequestOptions): Promise<unknown> {
  const secure = url.protocol === 'https:';
  const send = secure ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const request = send(
      url,
      { ...options, ...(!secure && { agent: undefined }), method: 'GET' },
      (response) => {
        const code = response.statusCode ?? 0;
        readBody(response)
          .then((body): unknown =>
            code === 200 ? JSON.parse(body) : Promise.reject(kubeRefusal(code, body)),
          )
          .then(resolve, reject);
      },
    );
    request.on('error', reject);
    request.end();
  });
}

async function readBody(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
