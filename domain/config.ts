// The netlease configuration file (JSON or YAML) read by the control worker, as zod schemas.
import { z } from 'zod';
import { parsePrefix, type Prefix } from './cidr';
import { DnsLabelSchema, DnsSubdomainSchema, NetworkNameSchema } from './names';
import { PoolSpecSchema, type PoolSpec } from './pool-spec';
import { describeIssues } from './text-schemas';

export { AddressText, CidrText, describeIssues } from './text-schemas';
export { ExclusionText, PoolSpecSchema, type PoolSpec } from './pool-spec';

/** A file path: PATH_MAX is 4096 bytes with the NUL. */
const filePath = z
  .string()
  .refine((path) => new TextEncoder().encode(path).length < 4096, 'longer than PATH_MAX');
/** Namespaces and task queues are short names; 255 is a quarter of Temporal's 1000-byte id limit. */
const temporalName = z.string().min(1).max(255);
/** The namespace travels in a gRPC header (`temporal-namespace`), which takes visible ASCII only. */
const namespaceName = temporalName.regex(
  /^[\x21-\x7e]+$/,
  'visible ASCII characters only (a gRPC header value)',
);

/** A task queue goes into visibility queries, where a control character fails the whole list. */
const taskQueueName = temporalName.regex(/^\P{Cc}+$/u, 'no control characters');

/**
 * host:port, the host a DNS name or IPv4 address (253) or a bracketed IPv6 address. Anything else
 * (no port, a URL) would only fail to connect: a mistake in the config, not a server away.
 */
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):([0-9]+)$/;
const TemporalAddress = z
  .string()
  .max(261)
  .superRefine((address, ctx) => {
    const port = HOST_PORT.exec(address)?.[3];
    if (port === undefined) ctx.addIssue({ code: 'custom', message: 'must be host:port' });
    else if (Number(port) < 1 || Number(port) > 65535)
      ctx.addIssue({ code: 'custom', message: 'the port must be 1 to 65535' });
  });

export const TemporalConnectionSchema = z
  .object({
    address: TemporalAddress.default('127.0.0.1:7233'),
    namespace: namespaceName.default('default'),
    taskQueue: taskQueueName.default('netlease-control'),
    tls: z
      .object({
        serverNameOverride: z.string().max(253).optional(),
        serverRootCACertificateFile: filePath.optional(),
        clientCertFile: filePath.optional(),
        clientKeyFile: filePath.optional(),
      })
      .strict()
      .superRefine((tls, ctx) => {
        // mTLS needs both halves; one alone would silently connect without a client certificate.
        const [cert, key] = [tls.clientCertFile, tls.clientKeyFile];
        if (cert && !key)
          ctx.addIssue({ code: 'custom', path: ['clientKeyFile'], message: 'required with clientCertFile' });
        if (key && !cert)
          ctx.addIssue({ code: 'custom', path: ['clientCertFile'], message: 'required with clientKeyFile' });
      })
      .optional(),
  })
  .strict();
export type TemporalConnection = z.infer<typeof TemporalConnectionSchema>;

export const ActivationPolicySchema = z
  .object({
    initialIntervalSeconds: z.number().positive().default(1),
    maximumIntervalSeconds: z.number().positive().default(30),
    /** Attempts before the lease parks in ActivationFailed (retriable by hand). */
    maximumAttempts: z.number().int().min(1).default(8),
    /** Schedule-to-close of one activation attempt on the node agent. */
    attemptTimeoutSeconds: z.number().positive().default(60),
    /** An Active lease whose pod is not Running after this long is shown as Stalled (not released). */
    stalledAfterSeconds: z.number().positive().default(600),
  })
  .strict();
export type ActivationPolicy = z.infer<typeof ActivationPolicySchema>;

/** One control worker at a time runs the watches, chosen by a coordination.k8s.io Lease. */
export const WatchLeadershipSchema = z
  .object({
    /** The Lease's namespace; omitted: the service account's (in a pod), else `default`. */
    namespace: z.string().min(1).optional(),
    /** A holder not seen renewing for this long is taken over (client-go's default, 15). */
    durationSeconds: z.number().int().min(2).max(300).default(15),
  })
  .strict();
export type WatchLeadership = z.infer<typeof WatchLeadershipSchema>;

/**
 * How long a Kubernetes call may go unanswered: the client sets no timeout, and a server that
 * accepts the connection and never answers would hold the caller (a watch event, a produce, the
 * reconciler) forever. A call past its bound fails and is retried by its caller.
 */
export const KubeTimeoutsSchema = z
  .object({
    /** One read or write of one object. */
    callSeconds: z.number().positive().max(600).default(5),
    /** One page (500 objects) of a paginated list. */
    listPageSeconds: z.number().positive().max(600).default(30),
    /**
     * A watch with no event and no bookmark for this long (from its opening) is closed and
     * reopened. The API server (1.34) sends a bookmark every minute, the first after two.
     */
    watchSilenceSeconds: z.number().positive().max(3600).default(180),
  })
  .strict();
export type KubeTimeouts = z.infer<typeof KubeTimeoutsSchema>;
export const DEFAULT_KUBE_TIMEOUTS: KubeTimeouts = KubeTimeoutsSchema.parse({});

/**
 * A lease whose workflow task fails on every attempt (a history the worker cannot run, such as the
 * SDK's update-order nondeterminism) does not move. The reconciler's sweep ends such a run once its
 * pending workflow task reaches `failedTaskAttempts`; the lease is then started again with its
 * sandboxes (pod running) or its addresses collected (pod gone), as for any terminated lease.
 */
export const WedgedLeasesSchema = z
  .object({
    /** The pending workflow task's attempt at which the run is ended (2: after one failure). */
    failedTaskAttempts: z.number().int().min(2).max(100_000).default(10),
    /**
     * Open leases whose workflow task one sweep reads (a describe each, 16 at a time), taking
     * turns across runs so a large cluster is covered in a few; 0: never read.
     */
    checksPerRun: z.number().int().min(0).max(1_000_000).default(1000),
    /**
     * More wedged runs than this in one sweep is not the SDK's rare ordering but a worker that
     * cannot run their histories (a bad deploy): ending them would start every lease again, so
     * the sweep ends none and says so (roll back, or raise this once the cause is known).
     */
    maxEndedPerRun: z.number().int().min(1).max(100_000).default(20),
  })
  .strict();
export type WedgedLeases = z.infer<typeof WedgedLeasesSchema>;

export const KubernetesSchema = z
  .object({
    /** Path to a kubeconfig; omitted: the in-cluster service account. */
    kubeconfig: z.string().optional(),
    timeouts: KubeTimeoutsSchema.default(DEFAULT_KUBE_TIMEOUTS),
    /** How often the reconciler schedule runs. */
    reconcileIntervalSeconds: z.number().int().min(1).default(60),
    /**
     * The reconciler releases a lease whose pod a quorum list lacks only when a second quorum read
     * this long after still finds no such pod (seen gone twice, as Calico's IPAM GC does).
     */
    releaseGraceSeconds: z.number().min(0).max(600).default(5),
    /**
     * Read the pools from NetleasePool objects (domain/pool-object) instead of `pools`: watched,
     * applied to the pool workflows as they change, their use written to each object's status.
     */
    poolObjects: z.boolean().default(false),
    /** How often each NetleasePool's status (its use) is read and written, besides on a change. */
    poolStatusIntervalSeconds: z.number().int().min(1).max(3600).default(30),
    /** Watch nodes and pods (hints that trigger verifying reads). */
    watch: z.boolean().default(true),
    /** Objects handled at once (a pod's pending events collapse into its latest state; one at a time per pod). */
    watchConcurrency: z.number().int().min(1).max(256).default(16),
    /** Replicas take turns at the watches; `false`: every replica watches (duplicate work, still safe). */
    watchLeadership: z.union([z.literal(false), WatchLeadershipSchema]).default({ durationSeconds: 15 }),
    /**
     * The interfaces (CNI_IFNAME) a pod's leases may be on: the pod watcher reads each of a pod's
     * leases by its id, `lease/<uid>/<ifName>`, never by a visibility list. A lease on another
     * interface is released by the reconciler's sweep only, which counts it (`leasesUnwatched`).
     */
    podInterfaces: z
      .array(z.string().min(1).max(15))
      .min(1)
      .max(16)
      .refine((names) => new Set(names).size === names.length, 'names an interface twice')
      .default(['eth0']),
    wedgedLeases: WedgedLeasesSchema.default(WedgedLeasesSchema.parse({})),
  })
  .strict();
export type KubernetesConfig = z.infer<typeof KubernetesSchema>;

/** Where a process serves GET /metrics (Prometheus); omitted: no metrics server. */
export const MetricsEndpointSchema = z
  .object({
    port: z.number().int().min(1).max(65535),
    /** Loopback by default: expose it deliberately (0.0.0.0) where Prometheus scrapes from elsewhere. */
    host: z.string().min(1).max(253).default('127.0.0.1'),
  })
  .strict();
export type MetricsEndpoint = z.infer<typeof MetricsEndpointSchema>;

export const ControlMetricsSchema = MetricsEndpointSchema.extend({
  /** How often lease phases (visibility counts) and node tables (state queries) are sampled. */
  sampleIntervalSeconds: z.number().int().min(1).default(30),
}).strict();
export type ControlMetrics = z.infer<typeof ControlMetricsSchema>;

/** Lowest level of the JSON log lines written to stdout. */
export const LogLevelSchema = z.enum(['trace', 'debug', 'info', 'warn', 'error', 'silent']).default('info');

export const NetleaseConfigSchema = z
  .object({
    temporal: TemporalConnectionSchema.default(TemporalConnectionSchema.parse({})),
    /** The pools; with `kubernetes.poolObjects` they come from the API instead (then none here). */
    pools: z.array(PoolSpecSchema).default([]),
    reuseCooldownSeconds: z.number().min(0).default(30),
    activation: ActivationPolicySchema.default(ActivationPolicySchema.parse({})),
    /**
     * A node workflow continues-as-new once its history passes this many events. A worker that
     * lost the run from its cache replays all of it (about 1 ms an event), so keep it short.
     */
    nodeHistoryLimit: z.number().int().min(100).default(1000),
    /** Kubernetes as the source of truth; omitted: no cluster (CNI-only operation). */
    kubernetes: KubernetesSchema.optional(),
    /**
     * Workflow runs kept in the control worker's cache. The SDK's default grows with the V8 heap
     * limit (about 900 here), and each cached lease costs memory; an evicted lease replays its
     * short history on its next task. Bounds the worker's RSS (deploy/control: 1 GiB limit).
     */
    maxCachedWorkflows: z.number().int().min(2).max(100_000).default(300),
    metrics: ControlMetricsSchema.optional(),
    logLevel: LogLevelSchema,
  })
  .strict()
  .superRefine((config, ctx) => {
    const fromObjects = config.kubernetes?.poolObjects === true;
    if (!fromObjects && config.pools.length === 0)
      ctx.addIssue({ code: 'custom', path: ['pools'], message: 'at least one pool is required' });
    if (fromObjects && config.pools.length > 0)
      ctx.addIssue({
        code: 'custom',
        path: ['pools'],
        message: 'the pools come from NetleasePool objects (kubernetes.poolObjects): remove them here',
      });
    const seen = new Set<string>();
    config.pools.forEach((pool, i) => {
      if (seen.has(pool.name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['pools', i, 'name'],
          message: `duplicate pool "${pool.name}"`,
        });
      }
      seen.add(pool.name);
    });
  });
export type NetleaseConfig = z.infer<typeof NetleaseConfigSchema>;

export const DEFAULT_CNI_SOCKET = '/run/netlease/cni.sock';
export const DEFAULT_DELETE_QUEUE = '/var/lib/netlease/cni-del-queue';
export const DEFAULT_OFFER_DIR = '/var/lib/netlease/offers';
/** A unix socket path fits sockaddr_un (108 bytes with its NUL), in bytes as the shim counts too. */
export const AbsolutePath = z
  .string()
  .regex(/^\//, 'must be an absolute path')
  .refine(
    (path) => new TextEncoder().encode(path).length <= 107,
    'must be at most 107 bytes (a unix socket path)',
  );

/** What a pre-produced lease is for: the same network, pool and mode as the node's CNI config. */
export const PreProduceSchema = z
  .object({
    network: NetworkNameSchema,
    /** As the conflist's `pool`; omitted (as there): each pod's pool is selected (domain/pool-selection). */
    pool: DnsLabelSchema.optional(),
    mode: z.enum(['ipam', 'ptp']).default('ipam'),
    ifName: z.string().min(1).max(15).default('eth0'),
    /**
     * The conflist the node's runtime reads, compared with these terms at start-up and by
     * `netleasectl check --node-agent-config`; default: install-cni's (domain/conflist) if it exists.
     */
    conflist: filePath.regex(/^\//, 'must be an absolute path').optional(),
  })
  .strict();
export type PreProduce = z.infer<typeof PreProduceSchema>;

/** The node agent's configuration: which node it serves and where the host side lives. */
export const NodeAgentConfigSchema = z
  .object({
    temporal: TemporalConnectionSchema.default(TemporalConnectionSchema.parse({})),
    /** Defaults to NETLEASE_NODE_NAME, else the host name lowercased, as in the CNI network config. */
    nodeName: DnsSubdomainSchema.optional(),
    /** Network namespace (name or path) for host ends of veth pairs; omitted: the agent's own. */
    hostNetns: z.string().min(1).optional(),
    /** Where the agent serves the CNI API to the static shim (the network config's agentSocket). */
    cniSocket: AbsolutePath.default(DEFAULT_CNI_SOCKET),
    /** DELs waiting to be applied (the network config's deleteQueue). */
    deleteQueue: AbsolutePath.default(DEFAULT_DELETE_QUEUE),
    /** Offers of pre-produced leases, held on disk to answer the pods' first ADDs (domain/offer). */
    offerDir: AbsolutePath.default(DEFAULT_OFFER_DIR),
    /** Reading pods bound to this node (pre-produce), Events on pods of refused ADDs; kubeconfig omitted: in-cluster. */
    kubernetes: z
      .object({
        kubeconfig: z.string().min(1).optional(),
        timeouts: KubeTimeoutsSchema.default(DEFAULT_KUBE_TIMEOUTS),
        /**
         * The pools are NetleasePool objects (the control worker's kubernetes.poolObjects): pool
         * selection reads their selectors from a watch of them, not from Temporal (the catalogue).
         */
        poolObjects: z.boolean().default(false),
      })
      .strict()
      .optional(),
    /** Leases produced when a pod is bound, before its ADD; they must match the node's CNI config. */
    preProduce: PreProduceSchema.optional(),
    metrics: MetricsEndpointSchema.optional(),
    logLevel: LogLevelSchema,
  })
  .strict()
  .superRefine((config, ctx) => {
    if (config.preProduce && !config.kubernetes)
      ctx.addIssue({ code: 'custom', path: ['preProduce'], message: 'needs a kubernetes section' });
  });
export type NodeAgentConfig = z.infer<typeof NodeAgentConfigSchema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Validates a decoded object, throwing ConfigError with field-named messages. */
export function parseWith<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (!result.success) throw new ConfigError(`invalid ${what}: ${describeIssues(result.error)}`);
  return result.data;
}

export function poolPrefixes(pool: PoolSpec): Prefix[] {
  return pool.cidrs.map((text) => parsePrefix(text));
}
