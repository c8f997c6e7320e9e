// A CNI 1.1.0 result, as a schema: tests check the shim's output against it.
import { z } from 'zod';
import { CidrText } from '../../domain/config';
import { parsePrefix } from '../../domain/cidr';

const AddressWithPrefix = z.string().refine((text) => {
  try {
    parsePrefix(text, true);
    return true;
  } catch {
    return false;
  }
}, 'not an address/prefix');

export const CniResultSchema = z
  .object({
    cniVersion: z.literal('1.1.0'),
    interfaces: z
      .array(z.object({ name: z.string(), mac: z.string().optional(), sandbox: z.string().optional() }))
      .optional(),
    ips: z
      .array(
        z
          .object({
            address: AddressWithPrefix,
            gateway: z.string().optional(),
            interface: z.number().int().optional(),
          })
          .strict(),
      )
      .min(1),
    routes: z.array(z.object({ dst: CidrText, gw: z.string().optional() }).strict()),
    dns: z.object({}).passthrough(),
  })
  .strict();
