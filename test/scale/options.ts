// What a scale run is asked to do (`npm run scale -- --sizes 100,300,1000 --leases-per-node 20`).
import { z } from 'zod';

const positiveInt = z.coerce.number().int().min(1);

export const ScaleOptionsSchema = z
  .object({
    /** Node counts, one stack per size, smallest first. */
    sizes: z
      .union([z.string(), z.array(z.number())])
      .transform((v): unknown[] => (typeof v === 'string' ? v.split(',').map((s) => s.trim()) : v))
      .pipe(z.array(positiveInt).min(1))
      .transform((sizes) => [...sizes].sort((a, b) => a - b))
      .default([100, 300, 1000]),
    /** Open leases per node while the figures are taken (Running pods, one lease each). */
    leasesPerNode: positiveInt.default(20),
    seed: z.coerce
      .number()
      .int()
      .min(0)
      .default(() => Math.floor(Math.random() * 2 ** 31)),
    /** An existing Temporal server (host:port); omitted: a server of its own per size. */
    temporal: z.string().optional(),
    /** The server each size starts without `temporal`: the pinned dev server, or Temporal on PostgreSQL. */
    server: z.enum(['dev', 'production']).default('dev'),
    /** Lifecycles in flight, for filling and for the throughput figure. */
    inFlight: positiveInt.max(256).default(32),
    /** Lifecycles of the throughput figure, run with the size's leases open. */
    lifecycles: positiveInt.default(300),
    /** Leases whose history size is read (closed and open ones). */
    historySample: positiveInt.default(50),
    /** Nodes listed by NodeName for the per-node listing time. */
    nodeSample: positiveInt.default(20),
    /** Where each size keeps its state, logs and figures (kept). */
    dir: z.string().optional(),
  })
  .strict();
export type ScaleOptions = z.infer<typeof ScaleOptionsSchema>;
