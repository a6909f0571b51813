/**
 * Holds that cannot recover (the job is removed after a grace period): what the pod then
 * reports. HoldReasonCode and HoldReasonSubCode as the schedd sets them
 * (docs/htcondor.md#hold-codes).
 */

const REASONS: Readonly<Record<number, string>> = {
  12: "OutputTransferFailed",
  13: "InputTransferFailed",
  34: "ResourceLimitExceeded",
  46: "DeadlineExceeded",
  47: "DeadlineExceeded",
};

/** The reason and exit code a pod whose job was held with this code reports once it is removed. */
export function holdOutcome(code: number, subCode: number | undefined): { reason: string; exitCode: number } {
  // Code 34 is a resource limit; its sub code says which (102 memory, 104 disk).
  if (code === 34 && subCode === 102) return { reason: "OOMKilled", exitCode: 137 };
  if (code === 34 && subCode === 104) return { reason: "EphemeralStorageExceeded", exitCode: 1 };
  return { reason: REASONS[code] ?? "JobHeld", exitCode: 1 };
}
