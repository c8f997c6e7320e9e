// NETLEASE_BENCH_LEAN_SDK=1: an experiment, never the product. Preloaded (`-r`) into the control
// worker and so into its workflow thread, it removes the two costs a CPU profile of that thread puts
// first, which no WorkerOptions turns off: the promise hook the SDK installs to keep a stack trace of
// every promise a workflow makes (the UI's "Stack Trace" tab), and the `timeout` it passes to every
// call into a workflow's V8 context (its deadlock detector; Node starts a watchdog thread per call).
// The bench measures what an SDK option for each would save (README, Benchmark).
/* eslint-disable @typescript-eslint/no-require-imports -- patched before the SDK loads */
import v8 = require('node:v8');
import vm = require('node:vm');

const noHook = () => () => undefined;
(v8.promiseHooks as { createHook: typeof v8.promiseHooks.createHook }).createHook = noHook;

const runInContext = vm.Script.prototype.runInContext;
vm.Script.prototype.runInContext = function (context, options) {
  const rest = { ...options };
  delete rest.timeout;
  return runInContext.call(this, context, rest);
};
