// A node agent for a test: in-process (fast, most tests) or as its own process (crash tests),
// with its host side in a namespace the test made.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { z } from 'zod';
import { NodeAgentConfigSchema, type TemporalConnection } from '../../domain/config';
import type { DataplaneActivities } from '../../domain/dataplane';
import { startTracked, stopPid, type Tracked } from '../../tools/processes';
import { createDataplaneActivities, offerActivities, type OfferKeeper } from '../../activities/dataplane';
import { createNodeAgent } from '../../worker/agent/dataplane-worker';
import { deleteAllNetns, makeNetns, type TestNetns } from './netns';
import { quietRuntime, temporalAddress } from './temporal';
import { openTestOffers } from './offers';
import { Client, Connection } from '@temporalio/client';
import type { HeldOffers } from '../../worker/agent/cni-api';
import type { OfferBook } from '../../worker/agent/offers';

export interface RunningNodeAgent {
  stop(): Promise<void>;
}

/** How the agent reaches Temporal: the dev server unless a test says otherwise (e.g. a TLS proxy). */
export type AgentTemporal = Partial<TemporalConnection>;

/** Where an agent process serves the CNI API; in-process agents leave that to the test file's. */
export interface AgentCniPaths {
  cniSocket: string;
  deleteQueue: string;
}

/** What else an agent process's config file says (pre-produce, offers, kubernetes). */
export type AgentExtras = Omit<z.input<typeof NodeAgentConfigSchema>, 'temporal' | 'nodeName' | 'hostNetns'>;

const agentConfig = (
  nodeName: string,
  hostNetns: string | undefined,
  temporal: AgentTemporal = {},
  cni?: AgentCniPaths,
  extras: AgentExtras = {},
) =>
  NodeAgentConfigSchema.parse({
    temporal: { address: temporalAddress(), ...temporal },
    nodeName,
    hostNetns,
    ...cni,
    ...extras,
  });

/**
 * `hostNetns` undefined: an ipam-only agent (no interfaces made); `offers`: what it revokes;
 * `watch`: sees the activities it runs (a test waits on an activation's end with it).
 */
export async function runNodeAgent(
  nodeName: string,
  hostNetns: string | undefined,
  temporal?: AgentTemporal,
  offers?: OfferKeeper,
  watch: (activities: DataplaneActivities) => DataplaneActivities = (activities) => activities,
): Promise<RunningNodeAgent> {
  quietRuntime();
  const config = agentConfig(nodeName, hostNetns, temporal);
  const activities = watch({ ...createDataplaneActivities({ hostNetns }), ...offerActivities(offers) });
  const agent = await createNodeAgent(config, activities);
  const running = agent.worker.run();
  return {
    async stop() {
      agent.worker.shutdown();
      await running;
      await agent.close();
    },
  };
}

/** A socket and queue of its own, so an agent process never takes over /run/netlease. */
function privateCniPaths(): AgentCniPaths {
  const dir = mkdtempSync(join(tmpdir(), 'netlease-cni-'));
  return { cniSocket: join(dir, 'cni.sock'), deleteQueue: join(dir, 'del-queue') };
}

export const NODE_AGENT_ENTRY = join(__dirname, '..', '..', 'worker', 'agent', 'node-agent.js');

export interface NodeAgentProcess extends Tracked {
  /** How it ended: its exit code, or the signal that killed it. */
  ended: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output(): string;
  stop(): Promise<void>;
}

/** `node dist/worker/agent/node-agent.js --config <file>`, tracked by PID, its output collected. */
export function startNodeAgentProcess(
  nodeName: string,
  hostNetns: string,
  env: Record<string, string> = {},
  temporal?: AgentTemporal,
  cni: AgentCniPaths = privateCniPaths(),
  extras: AgentExtras = {},
): NodeAgentProcess {
  const dir = mkdtempSync(join(tmpdir(), 'netlease-agent-'));
  const file = join(dir, 'node-agent.json');
  writeFileSync(file, JSON.stringify(agentConfig(nodeName, hostNetns, temporal, cni, extras)));
  const tracked = startTracked(process.execPath, [NODE_AGENT_ENTRY, '--config', file], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  tracked.child.stdout?.on('data', (d: Buffer) => (text += d.toString()));
  tracked.child.stderr?.on('data', (d: Buffer) => (text += d.toString()));
  // Its exit counts once its output is read to the end ('close', not 'exit'): a test reads the
  // last line the agent wrote before it died.
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    tracked.child.once('close', (code, signal) => resolve({ code, signal })),
  );
  const exited = ended.then(({ code }) => code);
  return { ...tracked, ended, exited, output: () => text, stop: () => stopPid(tracked.pid) };
}

/**
 * A host namespace and an in-process node agent for the whole test file; `host` is set before tests
 * run. With `held` (the file's CNI API context) the agent answers ADDs as the real one does: its
 * offer book gets the grants and makes ptp interfaces with the worker's own dataplane.
 */
export function withNodeAgent(
  nodeName: string,
  temporal: () => AgentTemporal = () => ({}),
  held?: HeldOffers,
): { readonly host: TestNetns } {
  let host: TestNetns | undefined;
  let agent: RunningNodeAgent | undefined;
  let book: { offers: OfferBook; close(): Promise<void> } | undefined;
  beforeAll(async () => {
    host = await makeNetns('host');
    const dataplane = createDataplaneActivities({ hostNetns: host.name });
    book = held ? await agentBook(dataplane) : undefined;
    if (held && book) held.offers = book.offers;
    agent = await runNodeAgent(nodeName, host.name, temporal(), book?.offers, (activities) => ({
      ...activities,
      ...dataplane,
    }));
  });
  afterAll(async () => {
    await book?.close();
    await agent?.stop();
    await deleteAllNetns();
  });
  return {
    get host() {
      if (!host) throw new Error('withNodeAgent: used before beforeAll ran');
      return host;
    },
  };
}

/** The agent's offer book on the test's dev server, making interfaces with `dataplane`. */
async function agentBook(dataplane: ReturnType<typeof createDataplaneActivities>) {
  const connection = await Connection.connect({ address: temporalAddress() });
  const offers = await openTestOffers(new Client({ connection }), {
    activate: dataplane.activateAttachment,
    deactivate: dataplane.deactivateAttachment,
  });
  return {
    offers,
    async close() {
      offers.close();
      await connection.close();
    },
  };
}
