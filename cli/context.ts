// Where netleasectl connects: the control config (--config or NETLEASE_CONFIG) with flags over
// it, a Temporal client through temporal/connection, Kubernetes through kubernetes/ when needed.
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { TemporalConnectionSchema, type TemporalConnection } from '../domain/config';
import { ClusterReader } from '../kubernetes/cluster-reader';
import { connectKube } from '../kubernetes/kube';
import { loadConfigFile } from '../worker/config-file';
import { argument, OutputSchema, UsageError, type CommandLine, type Output } from './args';
import { reachTemporal } from './reach';

export interface Context {
  client: Client;
  settings: TemporalConnection;
  taskQueue: string;
  ui: string;
  output: Output;
  /** undefined: no kubeconfig (no flag, no `kubernetes` section in the config). */
  cluster(): Promise<ClusterReader | undefined>;
  close(): Promise<void>;
}

/** A command whose arguments are checked: it runs once connected. */
export type Run = (context: Context) => Promise<number>;

const nonEmpty = z.string().min(1, 'must not be empty');
const UiSchema = z.url({ message: 'must be a URL such as http://127.0.0.1:8233' });

export async function connect(line: CommandLine): Promise<Context> {
  const { values } = line;
  const output = argument(OutputSchema, values.output, '-o/--output');
  const configPath = values.config ?? process.env.NETLEASE_CONFIG;
  const config = configPath ? loadConfigFile(argument(nonEmpty, configPath, '--config')) : undefined;
  const settings = argument(
    TemporalConnectionSchema,
    {
      ...(config?.temporal ?? {}),
      ...(values.address !== undefined ? { address: argument(nonEmpty, values.address, '--address') } : {}),
      ...(values.namespace !== undefined
        ? { namespace: argument(nonEmpty, values.namespace, '--namespace') }
        : {}),
      ...(values['task-queue'] !== undefined
        ? { taskQueue: argument(nonEmpty, values['task-queue'], '--task-queue') }
        : {}),
    },
    'temporal settings',
  );
  const ui = argument(
    UiSchema,
    values.ui ?? process.env.NETLEASE_UI ?? 'http://127.0.0.1:8233',
    '--ui',
  ).replace(/\/+$/, '');
  const kubeconfig =
    values.kubeconfig !== undefined ? argument(nonEmpty, values.kubeconfig, '--kubeconfig') : undefined;
  const useKube = kubeconfig !== undefined || config?.kubernetes !== undefined;
  let reader: Promise<ClusterReader> | undefined;
  const client = await reachTemporal(settings);
  return {
    client,
    settings,
    taskQueue: settings.taskQueue,
    ui,
    output,
    cluster() {
      if (!useKube) return Promise.resolve(undefined);
      reader ??= connectKube(kubeconfig ?? config?.kubernetes?.kubeconfig, config?.kubernetes?.timeouts).then(
        ({ core, timeouts }) => new ClusterReader(core, timeouts),
      );
      return reader;
    },
    close: () => client.connection.close(),
  };
}

/** The UI page of a workflow. */
export const uiLink = (context: Pick<Context, 'ui' | 'settings'>, workflowId: string) =>
  `${context.ui}/namespaces/${encodeURIComponent(context.settings.namespace)}/workflows/${encodeURIComponent(workflowId)}`;

export { UsageError };
