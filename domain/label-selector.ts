// A Kubernetes LabelSelector (metav1.LabelSelector): matchLabels and matchExpressions (In, NotIn,
// Exists, DoesNotExist), all of which must hold. Empty or absent, it selects everything, as in
// Kubernetes. Pure: the pool workflows validate specs that carry selectors (./pool-spec).
import { z } from 'zod';

export type Labels = Readonly<Record<string, string>>;

/** `[prefix/]name`: the prefix a DNS subdomain (253), the name 63 alphanumerics with `-_.` inside. */
const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function isLabelKey(key: string): boolean {
  const slash = key.lastIndexOf('/');
  const [prefix, name] = slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  if (prefix !== undefined && (prefix.length > 253 || !PREFIX.test(prefix))) return false;
  return name.length <= 63 && NAME.test(name);
}

export const LabelKeySchema = z
  .string()
  .refine(isLabelKey, 'not a label key ([prefix/]name, name at most 63)');
export const LabelValueSchema = z
  .string()
  .max(63, 'at most 63 characters')
  .regex(/^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/, 'not a label value');

const RequirementSchema = z
  .object({
    key: LabelKeySchema,
    operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
    values: z.array(LabelValueSchema).max(256).optional(),
  })
  .strict()
  .superRefine((req, ctx) => {
    const some = (req.values?.length ?? 0) > 0;
    const needs = req.operator === 'In' || req.operator === 'NotIn';
    if (needs && !some)
      ctx.addIssue({ code: 'custom', path: ['values'], message: `${req.operator} needs at least one value` });
    if (!needs && some)
      ctx.addIssue({ code: 'custom', path: ['values'], message: `${req.operator} takes no values` });
  });
export type LabelRequirement = z.infer<typeof RequirementSchema>;

export const LabelSelectorSchema = z
  .object({
    matchLabels: z.record(LabelKeySchema, LabelValueSchema).optional(),
    matchExpressions: z.array(RequirementSchema).max(64).optional(),
  })
  .strict();
export type LabelSelector = z.infer<typeof LabelSelectorSchema>;

/** Each requirement of the selector, matchLabels as `In` of one value. */
function requirements(selector: LabelSelector | undefined): LabelRequirement[] {
  const labels = Object.entries(selector?.matchLabels ?? {}).map(([key, value]) => ({
    key,
    operator: 'In' as const,
    values: [value],
  }));
  return [...labels, ...(selector?.matchExpressions ?? [])];
}

/** How many requirements the selector has: how specific it is (0: it selects everything). */
export const requirementCount = (selector: LabelSelector | undefined): number =>
  requirements(selector).length;

function holds(req: LabelRequirement, labels: Labels): boolean {
  const has = Object.hasOwn(labels, req.key);
  const value = labels[req.key];
  switch (req.operator) {
    case 'In':
      return has && (req.values ?? []).includes(value as string);
    case 'NotIn':
      return !has || !(req.values ?? []).includes(value as string);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
  }
}

const requirementText = (req: LabelRequirement): string => {
  const values = req.values ?? [];
  if (req.operator === 'In' && values.length === 1) return `${req.key}=${values[0]}`;
  if (req.operator === 'Exists') return req.key;
  if (req.operator === 'DoesNotExist') return `!${req.key}`;
  return `${req.key} ${req.operator === 'In' ? 'in' : 'notin'} (${values.join(',')})`;
};

const labelText = (labels: Labels, key: string): string =>
  Object.hasOwn(labels, key) ? `${key}=${labels[key]}` : `no ${key}`;

/**
 * The requirements the labels fail, as `kubectl` writes selectors, each with what the labels have
 * (`zone=eu (has zone=us)`); empty when the selector matches.
 */
export function selectorMisses(selector: LabelSelector | undefined, labels: Labels): string[] {
  return requirements(selector)
    .filter((req) => !holds(req, labels))
    .map((req) => `${requirementText(req)} (has ${labelText(labels, req.key)})`);
}

export const selectorMatches = (selector: LabelSelector | undefined, labels: Labels): boolean =>
  selectorMisses(selector, labels).length === 0;
