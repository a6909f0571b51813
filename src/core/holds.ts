/**
 * Holds that cannot recover (the job is removed after a grace period): what the pod then
 * reports. HoldReasonCode and HoldReasonSubCode as the schedd sets them
 * (docs/htcondor.md#hold-codes); the ways HTCondor reports a memory kill are in
 * docs/status.md#memory-kills.
 */

const REASONS: Readonly<Record<number, string>> = {
  12: "OutputTransferFailed",
  13: "InputTransferFailed",
  34: "ResourceLimitExceeded",
  46: "DeadlineExceeded",
  47: "DeadlineExceeded",
};

/** What the job's ad says about a hold and the job's memory. */
export interface HoldFacts {
  code: number;
  subCode?: number;
  /** HoldReason, as the schedd wrote it. */
  reason?: string;
  /** ResidentSetSize: the peak memory the starter measured, KiB. */
  usageKiB?: number;
  /** RequestMemory, MiB. */
  requestMiB?: number;
}

/** JobOutOfResources (34) and its sub codes (condor_holdcodes.h, OUT_OF_RESOURCES_SUB_CODE). */
const OUT_OF_RESOURCES = 34;
const SUB_MEMORY = 102;
const SUB_DISK = 104;
/** Holds a policy expression puts on a job: JobPolicy (3), StartdHeldJob (21), SystemPolicy (26). */
const POLICY_CODES: ReadonlySet<number> = new Set([3, 21, 26]);
/** The starter's words for a memory kill, before its hold carried sub code 102 (23.x to 24.0.11, 24.1 to 24.11). */
const STARTER_MEMORY_WORDS = /gone over (?:cgroup )?memory limit|encountered an out-of-memory event/i;
/** FailedToCreateProcess (6) for a job killed for memory while it started (os_proc.cpp). */
const OOM_AT_START_WORDS = /OOM killed by cgroup memory limit/i;

/** Whether the peak memory the starter measured reached the job's request (MemoryUsage >= RequestMemory). */
export function usedItsRequest(usageKiB: number | undefined, requestMiB: number | undefined): boolean {
  return usageKiB !== undefined && requestMiB !== undefined && requestMiB > 0 && usageKiB >= requestMiB * 1024;
}

/** Whether HTCondor held the job because it outgrew its memory (docs/status.md#memory-kills). */
export function isMemoryHold(h: HoldFacts): boolean {
  const reason = h.reason ?? "";
  if (h.code === OUT_OF_RESOURCES) return h.subCode === SUB_MEMORY || (h.subCode !== SUB_DISK && STARTER_MEMORY_WORDS.test(reason));
  if (h.code === 6) return OOM_AT_START_WORDS.test(reason);
  if (POLICY_CODES.has(h.code)) return h.subCode === SUB_MEMORY || usedItsRequest(h.usageKiB, h.requestMiB);
  return false;
}

/** The reason and exit code a pod whose job was held with this code reports once it is removed. */
export function holdOutcome(h: HoldFacts): { reason: string; exitCode: number } {
  if (isMemoryHold(h)) return { reason: "OOMKilled", exitCode: 137 };
  if (h.code === OUT_OF_RESOURCES && h.subCode === SUB_DISK) return { reason: "EphemeralStorageExceeded", exitCode: 1 };
  return { reason: REASONS[h.code] ?? "JobHeld", exitCode: 1 };
}
