// Where the shim sends a call and queues a DEL, read from stdin as cni/shim/main.go reads it
// (decode, effective): the top level when netlease is the main plugin, `ipam` when delegated,
// defaults for what is missing. A call whose config names another socket than the test agent's
// cannot reach it: the shim's "does not answer" is then the test environment's, not a finding.
export const DEFAULT_SOCKET = '/run/netlease/cni.sock';
export const DEFAULT_QUEUE = '/var/lib/netlease/cni-del-queue';

export interface ShimSettings {
  socket: string;
  queue: string;
}

const objectOf = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;

const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/** Where the agent would connect without an address: no Temporal of this test is there. */
export const DEFAULT_TEMPORAL = '127.0.0.1:7233';

/** The Temporal address the agent reads from this stdin, when it reads one (undefined: refused). */
export function agentTemporalAddress(stdin: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(stdin);
  } catch {
    return undefined;
  }
  const top = objectOf(parsed);
  const source = top?.type === 'netlease' ? top : objectOf(top?.ipam);
  if (!source) return undefined;
  if (source.temporal === undefined) return DEFAULT_TEMPORAL;
  const address = objectOf(source.temporal)?.address;
  return address === undefined && objectOf(source.temporal) ? DEFAULT_TEMPORAL : text(address) || undefined;
}

/** The shim's settings for this stdin; undefined when it is not JSON (the shim answers 6 itself). */
export function shimSettings(stdin: string): ShimSettings | undefined {
  let parsed: unknown;
  try {
    parsed = stdin.trim() ? JSON.parse(stdin) : {};
  } catch {
    return undefined;
  }
  const top = objectOf(parsed) ?? {};
  const ipam = objectOf(top.ipam);
  const source = top.type !== 'netlease' && ipam ? ipam : top;
  return {
    socket: text(source.agentSocket) || DEFAULT_SOCKET,
    queue: text(source.deleteQueue) || DEFAULT_QUEUE,
  };
}
