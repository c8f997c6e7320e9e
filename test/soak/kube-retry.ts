// Kubernetes calls of the soak's own (the cluster's part: pods, Nodes), retried while the API
// restarts; a refusal (4xx) is an answer, not an outage.
/** A 4xx from the API (not found, conflict, invalid): not an outage to wait out. */
export const isAnswer = (err: unknown): boolean => {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'number' && code >= 400 && code < 500;
};

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A Kubernetes call retried while the API restarts (a bounded wait); a 4xx is an answer. */
export async function retried<T>(what: string, call: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      if (isAnswer(err)) throw err;
      if (Date.now() > deadline) throw new Error(`${what}: no answer for 90 s: ${String(err)}`);
      await pause(500);
    }
  }
}
