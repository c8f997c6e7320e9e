// V8 flags and environment of the two long-running processes, in one place: `npm start`, the
// bench and the manifests (checked by test/integration/deploy-manifests) start them with these.
// Without the flags V8 sizes its heap from the host's memory (4 GiB here) and collects late, so
// RSS grows far past what the processes use; without MALLOC_ARENA_MAX glibc gives each of the
// SDK core's threads a malloc arena of its own, which keeps freed memory resident.
/** The node agent stays small: a short young generation, a bounded heap. */
export const NODE_AGENT_NODE_FLAGS = ['--max-semi-space-size=1', '--max-old-space-size=128'];
/** The control worker's heap fits its 1 GiB container; the workflow cache is bounded separately. */
export const CONTROL_WORKER_NODE_FLAGS = ['--max-semi-space-size=4', '--max-old-space-size=512'];

/** The environment both processes run with, on top of their own. */
export const PROCESS_ENV = { MALLOC_ARENA_MAX: '2' } as const;
