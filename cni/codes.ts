// CNI error codes (spec 1.1.0, "Error" section), and netlease's own (>= 100).

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

export type CniCodeValue = (typeof CniCode)[keyof typeof CniCode];
