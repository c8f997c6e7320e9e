// Why a CNI call was refused, as a stable kebab-case reason: the one table of them. Every CNI
// error carries one (its `msg` starts with it, the pod's Event says it, and
// netlease_cni_refusals_total counts by it); a lease failure's is derived here from its
// FailureType, the agent's own refusals name theirs where they are made or take their code's.
// docs/operating.md lists them with what an operator does (a unit test holds the two together).
import { FailureType, type FailureTypeName } from '../domain/lease';
import { CniCode, type CniCodeValue } from './codes';

/** A CNI code outside the spec's table: a bug of netlease, never a refusal of the request. */
export const INTERNAL_ERROR_CODE = 999;

type Code = CniCodeValue | typeof INTERNAL_ERROR_CODE;

/** Each reason and the CNI codes it comes with. */
export const REASONS = {
  // 5: the shim's own (stdin unreadable, a call too large to pass on).
  'bad-request': [CniCode.invalidEnv, CniCode.decodeFailure, CniCode.ioFailure],
  'incompatible-version': [CniCode.incompatibleVersion],
  'invalid-config': [CniCode.invalidNetworkConfig],
  'unknown-pool': [CniCode.invalidNetworkConfig],
  'no-pool-for-pod': [CniCode.invalidNetworkConfig],
  'invalid-pool-annotation': [CniCode.invalidNetworkConfig],
  'invalid-static-address': [CniCode.invalidNetworkConfig],
  'pool-on-other-task-queue': [CniCode.invalidNetworkConfig],
  'unknown-temporal-namespace': [CniCode.invalidNetworkConfig],
  'request-rejected': [CniCode.invalidNetworkConfig],
  'terms-mismatch': [CniCode.invalidNetworkConfig],
  'unsupported-field': [CniCode.unsupportedField],
  'tls-file-unreadable': [CniCode.ioFailure],
  'container-unknown': [CniCode.containerUnknown],
  'check-mismatch': [CniCode.checkMismatch],
  'pool-exhausted': [CniCode.poolExhausted],
  'address-conflict': [CniCode.addressConflict],
  'temporal-unreachable': [CniCode.tryAgainLater, CniCode.pluginNotAvailable],
  'control-plane-starting': [CniCode.tryAgainLater],
  'node-not-found': [CniCode.tryAgainLater],
  'pod-facts-unreadable': [CniCode.tryAgainLater],
  'node-replacing': [CniCode.tryAgainLater],
  'static-address-held': [CniCode.tryAgainLater],
  'sticky-address-fenced': [CniCode.tryAgainLater],
  'node-continuing': [CniCode.tryAgainLater],
  'table-rebuilding': [CniCode.tryAgainLater],
  'table-unverified': [CniCode.tryAgainLater],
  'lease-releasing': [CniCode.tryAgainLater],
  'activation-failed': [CniCode.tryAgainLater],
  // 11 and 50 (STATUS): the shim's own, the agent's socket not answering.
  'no-node-agent': [CniCode.pluginNotAvailable, CniCode.tryAgainLater],
  'internal-error': [INTERNAL_ERROR_CODE],
} as const satisfies Record<string, readonly Code[]>;

export type Reason = keyof typeof REASONS;

/** Named for refusals not built yet: kept for them, produced by nothing today. */
export const RESERVED_REASONS = [] as const;

/** The reason of a code that has one meaning; the others (5, 11, 50) name theirs where they are made. */
const BY_CODE = {
  [CniCode.incompatibleVersion]: 'incompatible-version',
  [CniCode.unsupportedField]: 'unsupported-field',
  [CniCode.containerUnknown]: 'container-unknown',
  [CniCode.invalidEnv]: 'bad-request',
  [CniCode.decodeFailure]: 'bad-request',
  [CniCode.invalidNetworkConfig]: 'invalid-config',
  [CniCode.poolExhausted]: 'pool-exhausted',
  [CniCode.addressConflict]: 'address-conflict',
  [CniCode.checkMismatch]: 'check-mismatch',
} as const satisfies Partial<Record<Code, Reason>>;

export type CodeWithReason = keyof typeof BY_CODE;

export const reasonOfCode = (code: CodeWithReason): Reason => BY_CODE[code];

/** A lease failure as the ADD answers it: its CNI code and reason. Every FailureType has one. */
export const FAILURE_REFUSALS: Record<FailureTypeName, { code: CniCodeValue; reason: Reason }> = {
  [FailureType.invalidConfig]: { code: CniCode.invalidNetworkConfig, reason: 'invalid-config' },
  [FailureType.termsMismatch]: { code: CniCode.invalidNetworkConfig, reason: 'terms-mismatch' },
  // No Node of that name: during a same-name replacement the kubelet's retry succeeds.
  [FailureType.nodeUnknown]: { code: CniCode.tryAgainLater, reason: 'node-not-found' },
  [FailureType.unsupported]: { code: CniCode.unsupportedField, reason: 'unsupported-field' },
  [FailureType.exhausted]: { code: CniCode.poolExhausted, reason: 'pool-exhausted' },
  [FailureType.conflict]: { code: CniCode.addressConflict, reason: 'address-conflict' },
  [FailureType.released]: { code: CniCode.tryAgainLater, reason: 'lease-releasing' },
  [FailureType.activationFailed]: { code: CniCode.tryAgainLater, reason: 'activation-failed' },
  // The Node was replaced while the lease produced: the runtime's next ADD reads the new one.
  [FailureType.incarnationGone]: { code: CniCode.tryAgainLater, reason: 'node-replacing' },
  // Another pod's, cooling down, or in another node's block: the ADD succeeds once it is free.
  [FailureType.staticAddressHeld]: { code: CniCode.tryAgainLater, reason: 'static-address-held' },
  // The ordinal's earlier pod's sandbox is not known gone: the ADD succeeds once it is.
  [FailureType.stickyAddressFenced]: { code: CniCode.tryAgainLater, reason: 'sticky-address-fenced' },
  // Transient: the lease's activity sends these again, so an ADD sees them only past its budget.
  [FailureType.nodeContinuing]: { code: CniCode.tryAgainLater, reason: 'node-continuing' },
  [FailureType.tableRebuilding]: { code: CniCode.tryAgainLater, reason: 'table-rebuilding' },
  [FailureType.tableUnverified]: { code: CniCode.tryAgainLater, reason: 'table-unverified' },
};

/** The refusal of a lease failure of this type; undefined for a type that is not a FailureType. */
export function failureRefusal(type: string | undefined): { code: CniCodeValue; reason: Reason } | undefined {
  return type !== undefined && Object.hasOwn(FAILURE_REFUSALS, type)
    ? FAILURE_REFUSALS[type as FailureTypeName]
    : undefined;
}

/** `pool-exhausted` → `PoolExhausted`: the reason as a Kubernetes Event's reason (UpperCamelCase). */
export const eventReason = (reason: Reason): string =>
  reason.replace(/(^|-)([a-z])/g, (_, _dash: string, letter: string) => letter.toUpperCase());
