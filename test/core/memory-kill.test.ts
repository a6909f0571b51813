// How a memory kill reads (docs/status.md#memory-kills): the container that the kernel killed
// with SIGKILL in a job HTCondor held or killed for memory reads the kubelet's OOMKilled, exit
// 137, with HTCondor's words as the message; so does every container of a pod whose wrapper
// wrote no line before the kill.
import { describe, expect, test } from "bun:test";
import type { JobAd } from "../../src/core/classad.ts";
import { type HoldFacts, holdOutcome, isMemoryHold } from "../../src/core/holds.ts";
import type { StateLine } from "../../src/core/state-line.ts";
import { type PodIdentity, podStatus } from "../../src/core/status.ts";

const T0 = 1_795_332_741;
const iso = (epoch: number) => new Date(epoch * 1000).toISOString().replace(/\.000Z$/, "Z");
const pod: PodIdentity = {
  uid: "u1",
  name: "oom",
  namespace: "default",
  jid: "9.0",
  containers: [{ name: "memory-hog", init: false, image: "docker://python:3.12" }],
};
const twoContainers: PodIdentity = { ...pod, containers: [...pod.containers, { name: "side", init: false, image: "docker://busybox" }] };
const killed: StateLine = { state: "terminated", exitCode: 137, reason: "Error", startedAt: T0, finishedAt: T0 + 4, ready: false, restartCount: 0 };
const failed = (exitCode: number, reason = "Error"): StateLine => ({ ...killed, exitCode, reason });
const runningLine: StateLine = { state: "running", startedAt: T0, ready: false, restartCount: 0 };

// HTCondor 25.0.13 on cgroup v1 with CGROUP_MEMORY_LIMIT_POLICY = hard, as it held the job.
const HOLD_25 =
  "Error from slot1_1@localhost: Job has gone over cgroup memory limit of 128 megabytes. Last measured usage: 128 megabytes.  Consider resubmitting with a higher request_memory.";
// HTCondor 23.0.0 (sub code 0), vanilla_proc.cpp
const HOLD_23 = "Error from slot1@ep: Job has gone over memory limit of 128 megabytes. Peak usage: 131 megabytes.";

describe("isMemoryHold and holdOutcome: every way HTCondor 23 to 25 holds a job for memory (docs/status.md#memory-kills)", () => {
  const cases: Array<[string, HoldFacts, boolean, string, number]> = [
    ["34/102, the starter from 24.0.12 and 24.12 on", { code: 34, subCode: 102, reason: HOLD_25 }, true, "OOMKilled", 137],
    ["34/0 with the starter's words, 23.x to 24.0.11", { code: 34, subCode: 0, reason: HOLD_23 }, true, "OOMKilled", 137],
    ["34/0, 23.0.x later wording", { code: 34, subCode: 0, reason: HOLD_25 }, true, "OOMKilled", 137],
    ["34/0, an OOM event with no limit", { code: 34, subCode: 0, reason: "Job has encountered an out-of-memory event." }, true, "OOMKilled", 137],
    ["34/102, docker universe", { code: 34, subCode: 102, reason: "Docker job has gone over memory limit of 128 Mb" }, true, "OOMKilled", 137],
    ["34/104 is disk", { code: 34, subCode: 104, reason: "Job has exceeded its disk usage limit" }, false, "EphemeralStorageExceeded", 1],
    ["34/0 with other words", { code: 34, subCode: 0, reason: "some other resource" }, false, "ResourceLimitExceeded", 1],
    ["21/102, the startd's HOLD_IF_MEMORY_EXCEEDED", { code: 21, subCode: 102, reason: "memory usage exceeded request_memory" }, true, "OOMKilled", 137],
    [
      "26, SYSTEM_PERIODIC_HOLD on MemoryUsage > RequestMemory",
      { code: 26, subCode: 0, reason: "x", usageKiB: 300 * 1024, requestMiB: 128 },
      true,
      "OOMKilled",
      137,
    ],
    ["3, periodic_hold below the request", { code: 3, subCode: 0, reason: "x", usageKiB: 100 * 1024, requestMiB: 128 }, false, "JobHeld", 1],
    [
      "6, OOM killed while it started",
      {
        code: 6,
        subCode: 0,
        reason: "Error from slot1@ep: Job was OOM killed by cgroup memory limit before it could start. Consider requesting more memory.",
      },
      true,
      "OOMKilled",
      137,
    ],
    ["6, any other start failure", { code: 6, subCode: 2, reason: "Failed to execute '/x'" }, false, "JobHeld", 1],
    ["12 is output transfer", { code: 12, reason: "memory limit" }, false, "OutputTransferFailed", 1],
  ];
  for (const [name, facts, memory, reason, exitCode] of cases) {
    test(name, () => {
      expect(isMemoryHold(facts)).toBe(memory);
      expect(holdOutcome(facts)).toEqual({ reason, exitCode });
    });
  }
});

describe("a job removed after a memory hold (docs/status.md#memory-kills)", () => {
  const oomFailure = (lines: Map<string, StateLine>) =>
    podStatus(twoContainers, { kind: "failed", reason: "OOMKilled", message: HOLD_25, exitCode: 137, lines });

  test("the container the kernel killed reads OOMKilled 137 with the hold reason, keeping its times", () => {
    const s = oomFailure(new Map([["c.memory-hog", killed]]));
    expect(s.containers[0]!.state.terminated).toMatchObject({
      exitCode: 137,
      reason: "OOMKilled",
      message: HOLD_25,
      startedAt: iso(T0),
      finishedAt: iso(T0 + 4),
    });
  });

  test("a container still running when the starter held the job reads the same", () => {
    const s = oomFailure(new Map([["c.memory-hog", killed], ["c.side", runningLine]]));
    expect(s.containers.map((c) => [c.state.terminated?.reason, c.state.terminated?.exitCode, c.state.terminated?.message])).toEqual([
      ["OOMKilled", 137, HOLD_25],
      ["OOMKilled", 137, HOLD_25],
    ]);
  });

  test("no line written before the kill: every container reads OOMKilled 137 with the hold reason", () => {
    const s = oomFailure(new Map());
    for (const c of s.containers) expect(c.state.terminated).toMatchObject({ exitCode: 137, reason: "OOMKilled", message: HOLD_25 });
  });

  test("a container that failed on its own keeps its code and reason", () => {
    const s = oomFailure(new Map([["c.memory-hog", killed], ["c.side", failed(2)]]));
    expect(s.containers[1]!.state.terminated).toMatchObject({ exitCode: 2, reason: "Error" });
  });

  test("a SIGKILL the wrapper sent (a probe) keeps its reason", () => {
    const s = oomFailure(new Map([["c.memory-hog", { ...failed(137, "LivenessProbeFailed"), signal: 9 }]]));
    expect(s.containers[0]!.state.terminated).toMatchObject({ exitCode: 137, reason: "LivenessProbeFailed" });
  });

  test("another hold keeps a container's own non-zero line", () => {
    const s = podStatus(pod, { kind: "failed", reason: "DeadlineExceeded", message: "too long", exitCode: 1, lines: new Map([["c.memory-hog", killed]]) });
    expect(s.containers[0]!.state.terminated).toMatchObject({ exitCode: 137, reason: "Error" });
  });
});

describe("a job that ended, killed by the kernel on a pool that does not hold (docs/status.md#memory-kills)", () => {
  const ended = (extra: JobAd, lines = new Map<string, StateLine>()) =>
    podStatus(pod, { kind: "ended", ad: { ClusterId: 9, ProcId: 0, JobStatus: 4, RequestMemory: 50, ...extra }, lines });

  test("ExitBySignal 9 with MemoryUsage at its request: OOMKilled 137", () => {
    const s = ended({ ExitBySignal: true, ExitSignal: 9, ResidentSetSize: 51_200 }, new Map([["c.memory-hog", runningLine]]));
    expect(s.containers[0]!.state.terminated).toMatchObject({ exitCode: 137, reason: "OOMKilled" });
    expect(s.containers[0]!.state.terminated?.message).toContain("request_memory (50 of 50 megabytes)");
  });

  test("ExitBySignal 9 below the request stays Error", () => {
    const s = ended({ ExitBySignal: true, ExitSignal: 9, ResidentSetSize: 10_000 });
    expect(s.containers[0]!.state.terminated).toMatchObject({ exitCode: 137, reason: "Error" });
  });

  test("the wrapper wrote 137 for a container and the job's memory reached its request: OOMKilled", () => {
    const s = ended({ ExitBySignal: false, ExitCode: 137, ResidentSetSize: 60_000 }, new Map([["c.memory-hog", killed]]));
    expect(s.containers[0]!.state.terminated).toMatchObject({ exitCode: 137, reason: "OOMKilled", finishedAt: iso(T0 + 4) });
  });

  test("137 with no memory measured stays Error", () => {
    const s = ended({ ExitBySignal: false, ExitCode: 137 }, new Map([["c.memory-hog", killed]]));
    expect(s.containers[0]!.state.terminated).toMatchObject({ exitCode: 137, reason: "Error" });
  });
});
