// A pause between two activation steps, named by NETLEASE_DATAPLANE_PAUSE_AFTER, so a test can
// kill the node agent at an exact point of an activation. Unset (always, outside tests): no-op.
export const PAUSE_ENV = 'NETLEASE_DATAPLANE_PAUSE_AFTER';
const LONGEST_PAUSE_MS = 10 * 60_000;

export async function pauseAfter(step: string): Promise<void> {
  if (process.env[PAUSE_ENV] !== step) return;
  console.log(`netlease node agent: paused after ${step} (${PAUSE_ENV})`);
  await new Promise((resolve) => setTimeout(resolve, LONGEST_PAUSE_MS));
}
