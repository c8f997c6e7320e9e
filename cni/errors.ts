// CNI error codes (spec 1.1.0, "Error" section) and the error the shim prints on stdout.

export const CniCode = {
  incompatibleVersion: 1,
  unsupportedField: 2,
  containerUnknown: 3,
  invalidEnv: 4,
  ioFailure: 5,
  decodeFailure: 6,
  invalidNetworkConfig: 7,
  tryAgainLater: 11,
  pluginNotAvailable: 50,
  limitedConnectivity: 51,
  /** Plugin-specific (>= 100): no address can be handed out. */
  poolExhausted: 100,
  /** Plugin-specific: an address would be held by two owners. */
  addressConflict: 101,
  /** Plugin-specific: CHECK found the interface different from the lease. */
  checkMismatch: 102,
} as const;

export class CniError extends Error {
  constructor(
    readonly code: number,
    msg: string,
    readonly details = '',
  ) {
    super(msg);
  }

  toJSON(cniVersion: string): Record<string, unknown> {
    return {
      cniVersion,
      code: this.code,
      msg: this.message,
      ...(this.details ? { details: this.details } : {}),
    };
  }
}

/** A value for a message: hostile input can be megabytes long. */
export function quoted(value: string): string {
  return value.length <= 64 ? `"${value}"` : `"${value.slice(0, 32)}…" (${value.length} characters)`;
}
