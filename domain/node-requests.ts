// The node workflow's messages as zod schemas: every update is validated before it is admitted
// and every signal before it changes anything (issue 25 item 3). An operator's form in the UI can
// send anything; a malformed message must change nothing and fail no workflow task.
import { z } from 'zod';
import { PoolSpecSchema } from './pool-spec';

const id = z.string().min(1).max(1000);
const uid = z.string().min(1).max(128);

export const IncarnationEventSchema = z.object({ uid });

export const AllocateRequestSchema = z.object({
  owner: id,
  podUid: z.string().max(128),
  pool: PoolSpecSchema,
  incarnation: z.string().max(128).optional(),
  run: z.string().max(200).optional(),
  addresses: z.array(z.string().min(1).max(64)).max(2).optional(),
  reservation: z.string().min(1).max(400).optional(),
});

export const ReleaseAddressRequestSchema = z.object({
  owner: id,
  pool: z.string().min(1).max(63),
  cooldownMs: z.number().min(0),
  run: z.string().max(200).optional(),
});

export const NodeOperationSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('allocate'), id, request: AllocateRequestSchema }),
  z.object({ kind: z.literal('release'), id, request: ReleaseAddressRequestSchema }),
]);

/** A batch: far below the 2 MB payload limit a caller would hit first. */
export const NodeBatchSchema = z.array(NodeOperationSchema).min(1).max(1000);

export const LoadAllocationSchema = z.object({
  pool: PoolSpecSchema,
  allocation: z.object({
    address: z.string().min(1).max(64),
    family: z.union([z.literal(4), z.literal(6)]),
    block: z.string().min(1).max(64),
    owner: id,
    podUid: z.string().max(128),
    incarnation: z.string().max(128),
  }),
});

/** The control worker asks a node whose table is not verified (a reset run) to rebuild it. */
export const RebuildRequestSchema = z.object({ forRun: z.string().min(1).max(128) });
export type RebuildRequest = z.infer<typeof RebuildRequestSchema>;
