// One watch connection that can be ended at any stage and notices when it goes silent. The
// client's Watch hands back its abort only once the response headers came, so a server that
// accepts the connection and never answers would hold the opening forever. The client makes an
// agent for each watch; this connection keeps it, and destroying it ends the socket wherever the
// request is. Silence: no event and no bookmark for `silenceMs`, counted from the opening.
import { Agent } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { KubeConfig } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import type { KubeClients } from './kube';

export type WatchEvent = (type: string, object: unknown) => void;

export class WatchConnection {
  private agent: Agent | undefined;
  private abort: AbortController | undefined;
  private closed = false;
  private silence: NodeJS.Timeout | undefined;
  private heardAt = 0;

  constructor(
    private readonly clients: KubeClients,
    private readonly silenceMs: number,
    private readonly onSilent: () => void,
  ) {}

  /** Opens the watch: `event` gets each line, `done` the end (an error, or null when it closed). */
  async open(
    path: string,
    query: Record<string, string | boolean>,
    event: WatchEvent,
    done: (err: unknown) => void,
  ): Promise<void> {
    this.heardAt = performance.now();
    this.checkSilence();
    const watch = new this.clients.kube.Watch(this.keepingAgent());
    const abort = await watch.watch(
      path,
      query,
      (type: string, object: unknown) => {
        if (this.closed) return;
        this.heardAt = performance.now();
        event(type, object);
      },
      (err: unknown) => {
        if (!this.closed) done(err);
      },
    );
    this.abort = abort;
    if (this.closed) abort.abort(); // closed while it was opening
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.silence);
    this.abort?.abort();
    this.agent?.destroy();
  }

  /** One timer, re-armed for the time left when it fires (not one per event: a busy watch has many). */
  private checkSilence(): void {
    if (this.closed) return;
    const quietMs = performance.now() - this.heardAt;
    if (quietMs >= this.silenceMs) return this.onSilent();
    this.silence = setTimeout(() => this.checkSilence(), this.silenceMs - quietMs);
  }

  /** The clients' config, but the agent it makes for the watch is kept here. */
  private keepingAgent(): KubeConfig {
    const { config } = this.clients;
    const keeping = Object.create(config) as KubeConfig;
    keeping.applyToFetchOptions = async (options) => {
      const init = await config.applyToFetchOptions(options);
      if (init.agent instanceof Agent) this.agent = init.agent;
      if (this.closed) this.agent?.destroy();
      return init;
    };
    return keeping;
  }
}
