// Bounds on what the runtime passes in the environment. Every value reaches a workflow id, update
// id (`add/<containerId>/<ifName>/<uuid>`, at most 1000 bytes), search attribute (2 KB) or the
// kernel, so each is checked here, before any call to Temporal: a bad one is error 4, not 11.
import { z } from 'zod';
import { isInterfaceName } from '../domain/lease';
import { CNI_NAME, CNI_NAME_RULE, DnsLabelSchema, DnsSubdomainSchema } from '../domain/names';
import { CniCode, CniError, quoted } from './errors';

const utf8Length = (text: string): number => Buffer.byteLength(text, 'utf8');

/** Runtimes use 64 hex digits; 256 keeps update ids near a third of Temporal's limit. */
export const ContainerIdSchema = z
  .string()
  .max(256, 'at most 256 characters')
  .regex(CNI_NAME, `${CNI_NAME_RULE} (CNI spec)`);

/** An absolute path, shorter than PATH_MAX (4096 bytes with the NUL). */
export const NetnsSchema = z
  .string()
  .refine(
    (path) => path.startsWith('/'),
    'an absolute path to the network namespace, such as /var/run/netns/<name>',
  )
  .refine((path) => utf8Length(path) < 4096, 'longer than PATH_MAX (4095 bytes)');

export const IfNameSchema = z
  .string()
  .refine(
    isInterfaceName,
    'a Linux interface name: at most 15 bytes (IFNAMSIZ), no "/", ":", "%" or spaces, not "." or ".."',
  )
  // Every network namespace has its loopback: an ADD of "lo" could only park (found by fuzzing).
  .refine((name) => name !== 'lo', 'not "lo": every network namespace has one already');

/** The Kubernetes keys of CNI_ARGS (CNI CONVENTIONS.md); other keys are ignored. */
const K8S_ARGS: Record<string, z.ZodType<string>> = {
  K8S_POD_NAMESPACE: DnsLabelSchema,
  K8S_POD_NAME: DnsSubdomainSchema,
  /** Kubernetes UIDs are UUIDs; 128 leaves room for other runtimes' ids. */
  K8S_POD_UID: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,127}$/, 'letters, digits and "-", at most 128'),
};

/**
 * `value` when `schema` accepts it, else error 4 naming `what` with the rule in the details.
 * Absent or empty is '': REQUIRED has already refused that where the command needs the value.
 */
export function checked(what: string, value: string | undefined, schema: z.ZodType<string>): string {
  if (!value) return '';
  const result = schema.safeParse(value);
  if (result.success) return value;
  const rules = result.error.issues.map((issue) => issue.message).join('; ');
  throw new CniError(CniCode.invalidEnv, `invalid ${what} ${quoted(value)}`, rules);
}

/** The Kubernetes keys, where present, must be well-formed. */
export function checkK8sArgs(args: Record<string, string>): void {
  for (const [key, schema] of Object.entries(K8S_ARGS)) checked(`CNI_ARGS ${key}`, args[key], schema);
}
