// The worker side of workflows/failpoints: a reached point pauses (kernel/failpoint) before the
// workflow task's completion goes to the server, when the process was started to pause there.
import type { InjectedSinks } from '@temporalio/worker';
import { pauseAfter } from '../../kernel/failpoint';
import type { FailpointSinks } from '../../workflows/failpoints';

export const failpointSinks = (): InjectedSinks<FailpointSinks> => ({
  failpoints: { reached: { fn: (_info, step) => pauseAfter(step), callDuringReplay: false } },
});
