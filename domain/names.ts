// Names netlease takes from Kubernetes and the CNI runtime, as zod schemas with their bounds.
// Each ends up in a workflow id, update id, search attribute or argument: the bounds keep them
// well inside Temporal's limits (ids 1000 bytes, Keyword values 2 KB).
import { z } from 'zod';

/** RFC 1123 label, as Kubernetes requires of namespaces (and netlease of pool names). */
export const DnsLabelSchema = z
  .string()
  .max(63, 'at most 63 characters')
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a DNS label (lowercase letters, digits, "-")');

/** RFC 1123 subdomain, as Kubernetes requires of pod and node names. */
export const DnsSubdomainSchema = z
  .string()
  .max(253, 'at most 253 characters')
  .regex(
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
    'must be a DNS subdomain (lowercase letters, digits, "-", ".")',
  );

/** The CNI spec's rule for network names and container ids. */
export const CNI_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
export const CNI_NAME_RULE = 'a letter or digit, then letters, digits, "_", "." or "-"';

/** Network names are stored in every lease; no real one comes near a DNS name's length. */
export const NetworkNameSchema = z.string().max(253, 'at most 253 characters').regex(CNI_NAME, CNI_NAME_RULE);
