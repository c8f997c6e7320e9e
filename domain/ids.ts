// Deterministic workflow ids: the same request always reaches the same workflow.

export const leaseWorkflowId = (podUid: string, ifName: string): string => `lease/${podUid}/${ifName}`;
export const nodeWorkflowId = (nodeName: string): string => `node/${nodeName}`;
export const poolWorkflowId = (poolName: string): string => `pool/${poolName}`;

/** Update ids of the shim's calls, so a retried CNI call is answered by the same update. */
export const addUpdateId = (containerId: string, ifName: string): string => `add/${containerId}/${ifName}`;
export const delUpdateId = (containerId: string, ifName: string): string => `del/${containerId}/${ifName}`;

/** Update ids of workflow-to-workflow calls, derived from the caller so retries de-duplicate. */
export const allocateUpdateId = (leaseId: string): string => `allocate/${leaseId}`;
export const releaseUpdateId = (leaseId: string): string => `release/${leaseId}`;
export const acquireBlockUpdateId = (
  node: string,
  incarnation: string,
  family: number,
  seq: number,
): string => `acquire/${node}/${incarnation}/${family}/${seq}`;
