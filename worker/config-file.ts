// Loads a configuration file (JSON or YAML); errors name the file and the field.
import { existsSync, readFileSync } from 'node:fs';
import type { z } from 'zod';
import { parse as parseYaml } from 'yaml';
import {
  ConfigError,
  NetleaseConfigSchema,
  parseWith,
  type NetleaseConfig,
  type PreProduce,
} from '../domain/config';
import { DEFAULT_CONFLIST, preProduceMismatch } from '../domain/conflist';

export function parseConfigText(text: string, source: string): NetleaseConfig;
export function parseConfigText<T>(text: string, source: string, schema: z.ZodType<T>): T;
export function parseConfigText(text: string, source: string, schema: z.ZodType = NetleaseConfigSchema) {
  let decoded: unknown;
  try {
    decoded = /\.json$/i.test(source) ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new ConfigError(`cannot decode ${source}: ${(err as Error).message}`);
  }
  return parseWith(schema, decoded, `config ${source}`);
}

export function loadConfigFile(path: string): NetleaseConfig;
export function loadConfigFile<T>(path: string, schema: z.ZodType<T>): T;
export function loadConfigFile(path: string, schema: z.ZodType = NetleaseConfigSchema) {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config ${path}: ${(err as Error).message}`);
  }
  return parseConfigText(expandEnvironment(text, process.env, path), path, schema);
}

/**
 * `$(NAME)` replaced by the environment variable NAME, as Kubernetes expands a container's command
 * and env: a DaemonSet's one config file can then name what differs per pod (the downward API's
 * node name or pod IP). `$$(NAME)` stays a literal `$(NAME)`; an unset NAME is an error naming it.
 */
export function expandEnvironment(text: string, env: NodeJS.ProcessEnv, source: string): string {
  return text.replace(/\$?\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (match, name: string) => {
    if (match.startsWith('$$')) return match.slice(1);
    const value = env[name];
    if (value === undefined)
      throw new ConfigError(`config ${source}: $(${name}) is not set in the environment`);
    return value;
  });
}

/** `--config <file>` or the environment variable `envName`. */
export function configPath(argv: string[], envName: string, usage: string): string {
  const flag = argv.indexOf('--config');
  const path = flag >= 0 ? argv[flag + 1] : process.env[envName];
  if (!path) throw new Error(`usage: ${usage} --config <file> (or set ${envName})`);
  return path;
}

/**
 * The node agent's preProduce against the conflist it names (`preProduce.conflist`, else
 * install-cni's when it exists): `mismatch` says how they differ, or that the file cannot be
 * read. undefined: no conflist to compare with.
 */
export function preProduceAgreement(
  preProduce: PreProduce,
): { conflist: string; mismatch?: string } | undefined {
  const conflist = preProduce.conflist ?? (existsSync(DEFAULT_CONFLIST) ? DEFAULT_CONFLIST : undefined);
  if (!conflist) return undefined;
  let decoded: unknown;
  try {
    decoded = JSON.parse(readFileSync(conflist, 'utf8'));
  } catch (err) {
    return { conflist, mismatch: `cannot read the conflist ${conflist}: ${(err as Error).message}` };
  }
  return { conflist, mismatch: preProduceMismatch(preProduce, decoded, conflist) };
}
