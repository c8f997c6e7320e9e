// Faults of the processes and links: SIGKILL (the control worker; an agent, also mid-activation),
// SIGSTOP past the watch leadership's Lease, servers restarted with their state (Temporal, etcd +
// kube-apiserver), links cut or stalled one at a time (every link to Temporal; one agent's; the
// control worker's to the kube-apiserver), and an agent's disk files damaged before it restarts.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TcpProxy } from '../harness/tcp-proxy';
import { pause, until, type FaultContext } from './fault-context';
import { LEADERSHIP_SECONDS, pauseEnv, signal, type SoakNode } from './stack';

export class ProcessFaults {
  constructor(private readonly ctx: FaultContext) {}

  private get stack() {
    return this.ctx.stack;
  }

  private get random() {
    return this.ctx.random;
  }

  async killControl(): Promise<string> {
    await this.stack.killControl();
    await pause(this.random.int(500, 3000));
    await this.stack.startControl();
    return 'control worker';
  }

  async killAgent(node: SoakNode): Promise<string> {
    await this.stack.killAgent(node);
    await pause(this.random.int(500, 3000));
    await this.stack.startAgent(node);
    return node.name;
  }

  /** The agent is restarted with the pause point set, killed once an activation stops there. */
  async killAgentMidActivation(node: SoakNode): Promise<string> {
    await this.stack.killAgent(node);
    const dir = join(this.stack.pauseDir, `${node.name}-${Date.now()}`);
    await this.stack.startAgent(node, pauseEnv('veth-created', dir));
    const paused = await until(() => node.agentOutput.includes('paused after veth-created'), 30_000);
    await this.stack.killAgent(node);
    await this.stack.startAgent(node);
    return `${node.name}${paused ? ' (mid-activation)' : ' (no activation came within 30 s)'}`;
  }

  async restartTemporal(): Promise<string> {
    await this.stack.stopTemporal();
    await this.stack.startTemporal();
    return 'temporal dev server';
  }

  async restartKube(): Promise<string> {
    await this.stack.stopKube();
    await this.stack.startKube();
    return 'etcd + kube-apiserver';
  }

  /** Every link to Temporal cut at once (the control worker's and every agent's). */
  async temporalUnreachable(): Promise<string> {
    const ms = this.random.int(2000, 6000);
    const links = this.stack.temporalLinks();
    for (const link of links) await link.cut();
    await pause(ms);
    for (const link of links) await link.restore();
    return `${ms} ms`;
  }

  /** One agent's link to Temporal (and its runtime's) cut or stalled. */
  async cutAgentTemporal(node: SoakNode): Promise<string> {
    return `${node.name}: ${await this.cutLink(node.link, 2000, 12_000)}`;
  }

  /** The control worker's link to the kube-apiserver cut or stalled (watches, reads, the Lease). */
  async cutControlKube(): Promise<string> {
    return this.cutLink(this.stack.controlKube, 2000, 12_000);
  }

  /**
   * Cut (connections refused) or stalled (open, nothing passes: a peer gone silent; those
   * connections stay dead after the restore, as behind a NAT that lost them), then restored.
   */
  private async cutLink(link: TcpProxy, shortest: number, longest: number): Promise<string> {
    const ms = this.random.int(shortest, longest);
    const stall = this.random.chance(0.5);
    if (stall) link.stall();
    else await link.cut();
    await pause(ms);
    await link.restore();
    return `${stall ? 'stalled' : 'cut'} ${ms} ms`;
  }

  /** SIGSTOP for longer than the watch leadership's Lease, then SIGCONT. */
  async sigstopControl(): Promise<string> {
    const control = this.stack.control;
    if (!control) return 'no control worker running';
    return `control worker: ${await this.stopped(control.pid)}`;
  }

  async sigstopAgent(node: SoakNode): Promise<string> {
    const agent = node.agent;
    if (!agent) return `${node.name}: no agent running`;
    return `${node.name}: ${await this.stopped(agent.pid)}`;
  }

  private async stopped(pid: number): Promise<string> {
    const ms = this.random.int(LEADERSHIP_SECONDS * 1000 + 1000, LEADERSHIP_SECONDS * 1000 + 10_000);
    signal(pid, 'SIGSTOP');
    await pause(ms);
    this.stack.thawed(pid, ms);
    signal(pid, 'SIGCONT');
    return `stopped ${ms} ms`;
  }

  /** Garbage in the agent's DEL queue and offer directory, then the agent restarted to read them. */
  async damageAgentFiles(node: SoakNode): Promise<string> {
    const queue = (node.netconf() as { deleteQueue: string }).deleteQueue;
    const offers = join(node.dir, 'offers');
    for (const dir of [queue, offers]) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `damaged-${Date.now()}.json`), '{"not": json');
      writeFileSync(join(dir, `empty-${Date.now()}.json`), '');
      mkdirSync(join(dir, `a-directory-${Date.now()}.json`), { recursive: true });
    }
    await this.stack.killAgent(node);
    await this.stack.startAgent(node);
    return node.name;
  }
}
