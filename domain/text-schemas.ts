// Small zod pieces that workflow code needs without the whole configuration: address and CIDR
// text (routes) and field-named issue messages (update validators). Kept apart from ./config so
// the workflow bundle does not build the configuration's schemas in every workflow (each workflow
// evaluates its own copy of the modules it imports); ./config re-exports them.
import { z } from 'zod';
import { CidrError, parseAddress, parsePrefix } from './cidr';

/** A zod refinement that accepts what `parse` accepts and reports its message otherwise. */
export function parsed(parse: (text: string) => unknown) {
  return z.string().superRefine((text, ctx) => {
    try {
      parse(text);
    } catch (err) {
      if (!(err instanceof CidrError)) throw err;
      ctx.addIssue({ code: 'custom', message: err.message });
    }
  });
}

export const CidrText = parsed((text) => parsePrefix(text));
export const AddressText = parsed(parseAddress);

/** One line per problem, each naming the field: `pools[0].cidrs[1]: invalid CIDR ...`. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path
        .map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`))
        .join('');
      return `${path || '(root)'}: ${issue.message}`;
    })
    .join('; ');
}
