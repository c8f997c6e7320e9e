// A pool as the configuration names it, as a zod schema of its own: node and pool workflows
// validate the specs their messages carry with it, and the bundle must not build the whole
// configuration's schemas in every workflow (./config re-exports it).
import { z } from 'zod';
import { lastAddress, overlaps, parseAddress, parsePrefix, type Family, type Prefix } from './cidr';
import { LabelSelectorSchema } from './label-selector';
import { DnsLabelSchema } from './names';
import { CidrText, parsed } from './text-schemas';

/** An exclusion is a CIDR or a single address. */
export const ExclusionText = parsed((text) => (text.includes('/') ? parsePrefix(text) : parseAddress(text)));

function tryPrefix(text: string): Prefix | undefined {
  try {
    return parsePrefix(text);
  } catch {
    return undefined;
  }
}

/** How long an ordinal's sticky addresses are kept once no pod holds them, unless the pool says. */
export const DEFAULT_STICKY_KEEP_SECONDS = 86_400;

export const PoolSpecSchema = z
  .object({
    name: DnsLabelSchema,
    cidrs: z.array(CidrText).min(1, 'a pool needs at least one CIDR'),
    blockSize: z
      .object({
        ipv4: z.number().int().min(0).max(32).default(26),
        ipv6: z.number().int().min(0).max(128).default(120),
      })
      .strict()
      .default({ ipv4: 26, ipv6: 120 }),
    exclude: z.array(ExclusionText).default([]),
    /** `first`: the first usable address of each node block is the gateway; `none`: no gateway. */
    gateway: z.enum(['first', 'none']).default('first'),
    /** Pods of the namespaces whose labels it matches may get addresses here (absent: all; ./pool-selection). */
    namespaceSelector: LabelSelectorSchema.optional(),
    /** Pods on the nodes whose labels it matches may get addresses here (absent: all; ./pool-selection). */
    nodeSelector: LabelSelectorSchema.optional(),
    /** StatefulSet pods keep their addresses per ordinal (./sticky-addresses). */
    sticky: z
      .object({
        /** Every StatefulSet of the pool (else only where an annotation opts in). */
        statefulSets: z.boolean().default(false),
        /** How long an ordinal's addresses are kept once no pod holds them. */
        keepSeconds: z.number().int().min(0).max(31_536_000).default(DEFAULT_STICKY_KEEP_SECONDS),
      })
      .strict()
      .optional(),
  })
  .strict()
  .superRefine((pool, ctx) => {
    // zod runs this even when a CIDR failed its own check: skip those, they are reported already.
    const prefixes = pool.cidrs.map(tryPrefix);
    prefixes.forEach((prefix, i) => {
      if (!prefix) return;
      const block = prefix.family === 4 ? pool.blockSize.ipv4 : pool.blockSize.ipv6;
      if (block < prefix.length) {
        ctx.addIssue({
          code: 'custom',
          path: ['cidrs', i],
          message: `block size /${block} is larger than the CIDR /${prefix.length}`,
        });
      }
      prefixes.slice(0, i).forEach((other, j) => {
        if (other && overlaps(prefix, other)) {
          ctx.addIssue({ code: 'custom', path: ['cidrs', i], message: `overlaps cidrs[${j}]` });
        }
      });
    });
  });
export type PoolSpec = z.infer<typeof PoolSpecSchema>;

/** A pool's exclusions as inclusive [first, last] ranges of one family. */
export function exclusionRanges(pool: PoolSpec, family: Family): Array<[bigint, bigint]> {
  return pool.exclude.flatMap((text): Array<[bigint, bigint]> => {
    if (text.includes('/')) {
      const p = parsePrefix(text);
      return p.family === family ? [[p.network, lastAddress(p)]] : [];
    }
    const a = parseAddress(text);
    return a.family === family ? [[a.value, a.value]] : [];
  });
}
