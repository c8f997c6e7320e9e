// A pause between two activation steps, named by NETLEASE_DATAPLANE_PAUSE_AFTER, so a test can
// kill the node agent at an exact point of an activation. Unset (always, outside tests): no-op.
export const PAUSE_ENV = 'NETLEASE_DATAPLANE_PAUSE_AFTER';
const LONGEST_PAUSE_MS = 10 * 60_000;

export async function pauseAfter(step: string): Promise<void> {
  if (process.env[PAUSE_ENV] !== step) return;
  // One JSON line like the agent's own log (kernel/ stands below observability/).
  const msg = `paused after ${step} (${PAUSE_ENV})`;
  console.log(JSON.stringify({ level: 'warn', time: new Date().toISOString(), proc: 'node-agent', msg }));
  await new Promise((resolve) => setTimeout(resolve, LONGEST_PAUSE_MS));
}
