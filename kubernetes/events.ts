// Kubernetes Events (core v1) the way client-go's EventRecorder writes them: recording never
// blocks nor fails the caller (a bounded queue written by one loop; past its bound an Event is
// dropped and counted), and the same object, type and reason again within a window patches the
// Event's count, lastTimestamp and message instead of creating another (its cache is bounded
// too). An Event patched after the API server expired it (its TTL, 1 h by default) is created anew.
import { errorMessage, type Log } from '../observability/log';
import { isNotFound, kubeCall, type KubeCallOptions, type KubeClients } from './kube';

/** The object an Event is about (involvedObject); no namespace: cluster-scoped. */
export interface EventObject {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
}

export interface EventNote {
  object: EventObject;
  type: 'Normal' | 'Warning';
  /** UpperCamelCase, as Kubernetes' own (`FailedScheduling`). */
  reason: string;
  message: string;
}

/** What became of a recorded note. */
export type EventOutcome = 'created' | 'patched' | 'dropped' | 'failed';

export interface EventRecorderOptions {
  kube: KubeClients;
  /** source.component and reportingComponent, e.g. `netlease-node-agent`. */
  component: string;
  /** source.host and reportingInstance: the node or the process. */
  host: string;
  log: Log;
  /** Notes waiting to be written; past it a note is dropped (client-go: 1000). */
  maxQueued?: number;
  /** Events remembered for patching (client-go's LRU: 4096). */
  maxKept?: number;
  /** Within it the same object and reason patch the Event (client-go's aggregation: 10 min). */
  windowMs?: number;
  counted?: (outcome: EventOutcome) => void;
}

/** The API server's bound on a message (events.k8s.io's note, 1 kB): longer ones are cut. */
const MAX_MESSAGE = 1024;

interface Kept {
  name: string;
  namespace: string;
  count: number;
  lastMs: number;
}

export interface EventRecorder {
  /** Queues the note; returns at once, whatever becomes of it. */
  record(note: EventNote): void;
  /** Resolves once every note queued so far is written (or given up). */
  flushed(): Promise<void>;
  close(): Promise<void>;
}

/** Cluster-scoped objects' Events live in `default` (what client-go does, and validation allows). */
const eventNamespace = (object: EventObject) => object.namespace || 'default';
const keyOf = ({ object, type, reason }: EventNote) =>
  JSON.stringify([object.kind, eventNamespace(object), object.name, object.uid ?? '', type, reason]);
/** metav1.Time: RFC 3339 in seconds. */
const timestamp = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
const cut = (message: string) =>
  message.length <= MAX_MESSAGE ? message : `${message.slice(0, MAX_MESSAGE - 1)}…`;

export function eventRecorder(options: EventRecorderOptions): EventRecorder {
  const { kube, component, host, log, maxQueued = 1000, maxKept = 4096, windowMs = 10 * 60_000 } = options;
  const counted = options.counted ?? (() => undefined);
  const queue: EventNote[] = [];
  const kept = new Map<string, Kept>(); // insertion order is recency: the first is evicted
  let writing: Promise<void> | undefined;
  let closed = false;
  let sequence = 0;
  const callMs = kube.timeouts.callSeconds * 1000;

  const create = async (note: EventNote, nowMs: number): Promise<Kept> => {
    const namespace = eventNamespace(note.object);
    // client-go's name: the object's and the time in nanoseconds, hex; a sequence fills the
    // nanoseconds, so two Events of one object in the same millisecond have two names.
    sequence = (sequence + 1) % 1_000_000;
    const name = `${note.object.name}.${(BigInt(nowMs) * 1_000_000n + BigInt(sequence)).toString(16)}`;
    const at = timestamp(nowMs);
    const body = {
      metadata: { name, namespace },
      involvedObject: note.object,
      type: note.type,
      reason: note.reason,
      message: cut(note.message),
      count: 1,
      firstTimestamp: at,
      lastTimestamp: at,
      source: { component, host },
      reportingComponent: component,
      reportingInstance: host,
    };
    await kubeCall(`create Event ${namespace}/${name}`, callMs, (o) =>
      // The body is sent as JSON as it is: timestamps as text, not Dates the client would convert.
      kube.core.createNamespacedEvent({ namespace, body: body as never }, o),
    );
    return { name, namespace, count: 1, lastMs: nowMs };
  };

  const patch = async (event: Kept, note: EventNote, nowMs: number): Promise<Kept> => {
    const count = event.count + 1;
    const body = { count, lastTimestamp: timestamp(nowMs), message: cut(note.message) };
    const mergePatch = (o: KubeCallOptions) =>
      kube.kube.setHeaderOptions('Content-Type', kube.kube.PatchStrategy.MergePatch, o);
    await kubeCall(`patch Event ${event.namespace}/${event.name}`, callMs, (o) =>
      kube.core.patchNamespacedEvent({ name: event.name, namespace: event.namespace, body }, mergePatch(o)),
    );
    return { ...event, count, lastMs: nowMs };
  };

  const write = async (note: EventNote) => {
    const key = keyOf(note);
    const nowMs = Date.now();
    const known = kept.get(key);
    kept.delete(key);
    let event: Kept | undefined;
    if (known && nowMs - known.lastMs < windowMs) {
      event = await patch(known, note, nowMs).then(
        (patched) => (counted('patched'), patched),
        (err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)),
      );
    }
    if (!event) {
      event = await create(note, nowMs);
      counted('created');
    }
    kept.set(key, event);
    if (kept.size > maxKept) kept.delete(kept.keys().next().value as string);
  };

  const drain = async () => {
    for (let note = queue.shift(); note; note = queue.shift()) {
      await write(note).catch((err: unknown) => {
        counted('failed');
        log.warn(
          { reason: note?.reason, object: note?.object.name, error: errorMessage(err) },
          'Event not written',
        );
      });
    }
  };

  const start = () => {
    writing ??= drain().finally(() => {
      writing = undefined;
      if (queue.length && !closed) start();
    });
    return writing;
  };

  return {
    record(note) {
      if (closed || queue.length >= maxQueued) return counted('dropped');
      queue.push(note);
      void start();
    },
    async flushed() {
      while (writing) await writing;
    },
    async close() {
      closed = true;
      queue.length = 0;
      await writing;
    },
  };
}
