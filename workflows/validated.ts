// Update validators: synchronous zod checks whose messages name the offending field.
import type { z } from 'zod';
import { describeIssues } from '../domain/text-schemas';

export const validated =
  <T>(schema: z.ZodType<T>, what: string) =>
  (value: unknown): void => {
    const result = schema.safeParse(value);
    if (!result.success) throw new Error(`invalid ${what} request: ${describeIssues(result.error)}`);
  };
