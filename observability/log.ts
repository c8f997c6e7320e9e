// Structured logs: one JSON line per event on stdout (pino), with the lease id, pod, node, verb,
// code and duration where they apply. The Temporal SDK's logger is routed through the same
// stream (sdkLogger): an expected retry is one short line, never a stack.
import type { LogLevel, LogMetadata, Logger as SdkLogger } from '@temporalio/common';
import pino, { type DestinationStream, type Logger } from 'pino';

export type Log = Logger;
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

/** The process's logger: `{"level":"info","time":"...","proc":"node-agent","msg":"..."}` per line. */
export function createLog(proc: string, level: LogLevelName = 'info', destination?: DestinationStream): Log {
  const options = {
    level,
    base: { proc },
    messageKey: 'msg',
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  return destination ? pino(options, destination) : pino(options);
}

/** A logger that writes nothing (tests, tools). */
export const silentLog = (): Log => pino({ level: 'silent' });

export const errorMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** First line of a message, at most `max` characters: a cause, not a stack or a dump. */
export function shortMessage(text: string, max = 300): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

interface FailureLike {
  name?: unknown;
  message?: unknown;
  type?: unknown;
  cause?: unknown;
}

/** `{error, errorType}` of a failure: the innermost cause's message and type, one line. */
export function describeFailure(err: unknown): { error: string; errorType?: string } {
  let current: unknown = err;
  for (let depth = 0; depth < 5; depth++) {
    const cause = (current as FailureLike | undefined)?.cause;
    if (!cause || typeof cause !== 'object') break;
    current = cause;
  }
  const failure = (current ?? {}) as FailureLike;
  const type = typeof failure.type === 'string' ? failure.type : failure.name;
  const message = typeof failure.message === 'string' ? failure.message : String(current);
  return { error: shortMessage(message), ...(typeof type === 'string' ? { errorType: type } : {}) };
}

/** SDK metadata that is long or internal: left out of our lines. */
const DROPPED = new Set(['taskToken', 'namespace', 'isLocal', 'activityRunId', 'stackTrace']);

/** The SDK's log metadata, reshaped: workflowId lease/... → leaseId, errors → one line. */
export function sdkFields(meta: LogMetadata | undefined): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(meta ?? {})) {
    if (DROPPED.has(key) || value === undefined) continue;
    if (key === 'error' || key === 'failure' || value instanceof Error)
      Object.assign(fields, describeFailure(value));
    else if (key === 'workflowId' && typeof value === 'string' && value.startsWith('lease/'))
      fields.leaseId = value;
    else if (key === 'durationMs' && typeof value === 'number') fields.durationMs = Math.round(value);
    else fields[key] = value;
  }
  return fields;
}

/** SDK messages about how netlease is meant to run, not problems: logged at info. */
const BY_DESIGN = new Set(['No workflows registered, not polling for workflow tasks']);

const LEVELS: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * A DefaultLogger-compatible adapter for `Runtime.install({ logger })`: every SDK message, Core's
 * forwarded ones included, becomes one of our JSON lines. A failed activity attempt (the SDK logs
 * it at WARN with the whole error) is `{"msg":"activity attempt failed","activityType":...,
 * "attempt":2,"error":"<message>","errorType":"..."}`.
 */
export function sdkLogger(log: Log): SdkLogger {
  const write = (level: LogLevel, message: string, meta?: LogMetadata) => {
    const method = BY_DESIGN.has(message) ? 'info' : (LEVELS[level] ?? 'info');
    if (!log.isLevelEnabled(method)) return;
    const fields = sdkFields(meta);
    const msg = message === 'Activity failed' ? 'activity attempt failed' : shortMessage(message);
    log[method]({ sdk: true, ...fields }, msg);
  };
  return {
    log: write,
    trace: (message, meta) => write('TRACE', message, meta),
    debug: (message, meta) => write('DEBUG', message, meta),
    info: (message, meta) => write('INFO', message, meta),
    warn: (message, meta) => write('WARN', message, meta),
    error: (message, meta) => write('ERROR', message, meta),
  };
}
