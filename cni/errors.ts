// The error the shim prints on stdout (spec 1.1.0, "Error" section), with the reason of the
// refusal (cni/refusals) at the start of its msg: the kubelet's Event on the pod shows the msg.
import { CniCode, type CniCodeValue } from './codes';
import { reasonOfCode, type CodeWithReason, type Reason } from './refusals';

export { CniCode };

export class CniError extends Error {
  readonly reason: Reason;

  /** A code with one meaning takes its reason from it; 5, 11, 50 and 999 name theirs. */
  constructor(code: CodeWithReason, msg: string, details?: string, reason?: Reason);
  constructor(code: CniCodeValue | number, msg: string, details: string, reason: Reason);
  constructor(
    readonly code: number,
    msg: string,
    readonly details = '',
    reason?: Reason,
  ) {
    super(msg);
    this.reason = reason ?? reasonOfCode(code as CodeWithReason);
  }

  /** `pool-exhausted: pool p has no free IPv4 address ...`: the msg the runtime and the Event show. */
  get text(): string {
    return `${this.reason}: ${this.message}`;
  }

  toJSON(cniVersion: string): Record<string, unknown> {
    return {
      cniVersion,
      code: this.code,
      msg: this.text,
      ...(this.details ? { details: this.details } : {}),
    };
  }
}

/** A value for a message: hostile input can be megabytes long. */
export function quoted(value: string): string {
  return value.length <= 64 ? `"${value}"` : `"${value.slice(0, 32)}…" (${value.length} characters)`;
}
