// Loads @kubernetes/client-node (an ES module) from our CommonJS build and connects it.
import type * as Kube from '@kubernetes/client-node' with { 'resolution-mode': 'import' };

export type KubeModule = typeof Kube;
export type CoreApi = Kube.CoreV1Api;

export interface KubeClients {
  kube: KubeModule;
  config: Kube.KubeConfig;
  core: CoreApi;
}

/** `kubeconfig` path, or the in-cluster service account when omitted. */
export async function connectKube(kubeconfig?: string): Promise<KubeClients> {
  const kube = await import('@kubernetes/client-node');
  const config = new kube.KubeConfig();
  if (kubeconfig) config.loadFromFile(kubeconfig);
  else config.loadFromDefault();
  return { kube, config, core: config.makeApiClient(kube.CoreV1Api) };
}

/** 404 from the API server: the object does not exist (as of a quorum read). */
export function isNotFound(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 404;
}
