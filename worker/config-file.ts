// Loads the netlease configuration from a JSON or YAML file; errors name the file and the field.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { ConfigError, NetleaseConfigSchema, parseWith, type NetleaseConfig } from '../domain/config';

export function parseConfigText(text: string, source: string): NetleaseConfig {
  let decoded: unknown;
  try {
    decoded = /\.json$/i.test(source) ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new ConfigError(`cannot decode ${source}: ${(err as Error).message}`);
  }
  return parseWith(NetleaseConfigSchema, decoded, `config ${source}`);
}

export function loadConfigFile(path: string): NetleaseConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config ${path}: ${(err as Error).message}`);
  }
  return parseConfigText(text, path);
}
