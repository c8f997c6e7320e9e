// CNI results as strict schemas, one per spec version, written from the spec's Result section
// (0.3.1 and 0.4.0: SPEC.md at spec-v0.4.0, pkg/types/040; 1.0.0 and 1.1.0: pkg/types/100 and
// pkg/types). Tests check the shim's output against them.
import { z } from 'zod';
import { AddressText, CidrText } from '../../domain/config';
import { parsePrefix } from '../../domain/cidr';

const AddressWithPrefix = z.string().refine((text) => {
  try {
    parsePrefix(text, true);
    return true;
  } catch {
    return false;
  }
}, 'not an address/prefix');

const Dns = z
  .object({
    nameservers: z.array(z.string()).optional(),
    domain: z.string().optional(),
    search: z.array(z.string()).optional(),
    options: z.array(z.string()).optional(),
  })
  .strict();

const Interface = z.object({
  name: z.string().min(1),
  mac: z.string().optional(),
  sandbox: z.string().optional(),
});
/** 1.1.0 adds mtu, socketPath and pciID to interfaces. */
const Interface110 = Interface.extend({
  mtu: z.number().int().optional(),
  socketPath: z.string().optional(),
  pciID: z.string().optional(),
});

const Route = z.object({ dst: CidrText, gw: AddressText.optional() });
/** 1.1.0 adds mtu, advmss, priority, table and scope to routes. */
const Route110 = Route.extend({
  mtu: z.number().int().optional(),
  advmss: z.number().int().optional(),
  priority: z.number().int().optional(),
  table: z.number().int().optional(),
  scope: z.number().int().optional(),
});

const Ip = z.object({
  address: AddressWithPrefix,
  gateway: AddressText.optional(),
  interface: z.number().int().min(0).optional(),
});
/** Until 1.0.0 every IP names its family; it must match the address. */
const Ip04 = Ip.extend({ version: z.enum(['4', '6']) })
  .strict()
  .refine((ip) => ip.version === (ip.address.includes(':') ? '6' : '4'), 'version is not the address family');

function resultSchema<I extends z.ZodType, F extends z.ZodType, R extends z.ZodType>(
  version: string,
  parts: { ip: I; iface: F; route: R },
) {
  return z
    .object({
      cniVersion: z.literal(version),
      interfaces: z.array(parts.iface).optional(),
      ips: z.array(parts.ip).min(1),
      routes: z.array(parts.route).optional(),
      dns: Dns.optional(),
    })
    .strict()
    .superRefine((result, ctx) => {
      const count = result.interfaces?.length ?? 0;
      (result.ips as Array<{ interface?: number }>).forEach((ip, i) => {
        if (ip.interface !== undefined && ip.interface >= count) {
          ctx.addIssue({ code: 'custom', path: ['ips', i, 'interface'], message: 'not an interfaces index' });
        }
      });
    });
}

const v04 = { ip: Ip04, iface: Interface.strict(), route: Route.strict() };
const v100 = { ip: Ip.strict(), iface: Interface.strict(), route: Route.strict() };

export const CniResultSchemas = {
  '0.3.1': resultSchema('0.3.1', v04),
  '0.4.0': resultSchema('0.4.0', v04),
  '1.0.0': resultSchema('1.0.0', v100),
  '1.1.0': resultSchema('1.1.0', { ...v100, iface: Interface110.strict(), route: Route110.strict() }),
};

export const CniResultSchema = CniResultSchemas['1.1.0'];
