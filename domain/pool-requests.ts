// The pool workflow's messages as zod schemas (issue 25 item 3): validated before admission.
import { z } from 'zod';
import { PoolSpecSchema } from './pool-spec';

const name = z.string().min(1).max(253);
const uid = z.string().max(128);
const family = z.union([z.literal(4), z.literal(6)]);
const cidr = z.string().min(1).max(64);

export const AcquireBlockRequestSchema = z.object({
  node: name,
  incarnation: uid,
  family,
  spec: PoolSpecSchema,
  /** A static address's pinned block (domain/static-addresses). */
  block: cidr.optional(),
  /** The sticky reservation the pinned address is for (domain/sticky-addresses). */
  reservation: z.string().min(1).max(400).optional(),
});

export const ReserveRequestSchema = z.object({ key: z.string().min(1).max(400) });
/** `<namespace>/<statefulset>` of StatefulSets deleted from the cluster (the reconciler's quorum read). */
export const EndReservationsRequestSchema = z.object({
  statefulSets: z
    .array(
      z
        .string()
        .min(3)
        .max(400)
        .regex(/^[^/]+\/[^/]+$/),
    )
    .max(10_000),
});
export const BlockRequestSchema = AcquireBlockRequestSchema.extend({ id: z.string().min(1).max(1000) });
export const BlockRequestsSchema = z.array(BlockRequestSchema).min(1).max(1000);

export const ReturnBlocksRequestSchema = z.object({
  node: name,
  incarnation: uid,
  blocks: z.array(cidr).max(10_000).optional(),
});

export const MoveBlocksRequestSchema = z.object({
  node: name,
  from: uid,
  to: uid.min(1),
  blocks: z.array(cidr).min(1).max(10_000),
});
export type MoveBlocksRequest = z.infer<typeof MoveBlocksRequestSchema>;

/** The control worker's configuration of the pool, and every pool it serves (for the agents). */
export const PoolConfigurationSchema = z.object({
  spec: PoolSpecSchema,
  configuredPools: z.array(z.string().min(1).max(63)).max(1000),
});
export type PoolConfiguration = z.infer<typeof PoolConfigurationSchema>;
