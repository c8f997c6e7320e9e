// Whether a node's or a pool's table can be used: rebuilt in this run since the run's last reset,
// or carried by continue-as-new from a run whose table could be, in a run never reset. A reset
// run's table is an earlier one, and the updates reapplied after the reset point may have been
// answered otherwise the first time. Decided on the resets the history passed (workflows/resets),
// which replay the same, not on run ids, which do not.
import { resetsSeen } from './resets';

export class TableTrust {
  /** The resets seen when this run last rebuilt its table; undefined: it has not rebuilt. */
  private rebuiltAfter: number | undefined;

  /** `carried`: the run began with a table its previous run vouched for. */
  constructor(private readonly carried: boolean) {}

  /** The trust of a run that began with `state` (none: a fresh run; no `trustCarried`: older runs). */
  static carriedIn(state: { trustCarried?: boolean } | undefined): TableTrust {
    return new TableTrust(state !== undefined && state.trustCarried !== false);
  }

  /**
   * A rebuild begins; what it returns marks its evidence applied. The table is vouched for until
   * the next reset, and not at all if a reset came while the evidence was gathered (a run reset
   * just after its rebuild replays that rebuild's end in the very activation that re-seeds it).
   */
  rebuilding(): () => void {
    const since = resetsSeen();
    return () => {
      this.rebuiltAfter = since;
    };
  }

  trusted(): boolean {
    if (this.rebuiltAfter === resetsSeen()) return true;
    return this.carried && resetsSeen() === 0;
  }
}
