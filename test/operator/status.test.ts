// The HTCJob status from HTCondor's view of its procs (src/operator/status.ts;
// docs/operator.md#following-the-procs and #status), and the operator's store
// (docs/operator.md#the-store, #never-twice).
import { expect, test } from "bun:test";
import { carryTimes, htcjobStatus, procState, statusDiffers, statusEvents } from "../../src/operator/status.ts";
import { openHTCJobStore } from "../../src/operator/store.ts";
import { bunRuntime } from "../../src/runtime/bun.ts";

const TERMINAL = [34, 46];

test.each([
  [{ proc: 0, jobStatus: 1 }, { state: "idle" }],
  [{ proc: 0, jobStatus: 2 }, { state: "running" }],
  [{ proc: 0, jobStatus: 6 }, { state: "running" }],
  [{ proc: 0, jobStatus: 4, exitCode: 0 }, { state: "succeeded", exitCode: 0 }],
  [{ proc: 0, jobStatus: 4, exitCode: 3 }, { state: "failed", exitCode: 3, reason: "exited with code 3" }],
  [{ proc: 0, jobStatus: 4, exitBySignal: true, exitSignal: 9 }, { state: "failed", exitCode: 137, reason: "killed by signal 9" }],
  [{ proc: 0, jobStatus: 3, removeReason: "by hand" }, { state: "failed", reason: "removed outside the operator: by hand" }],
  [{ proc: 0, jobStatus: 5, holdCode: 26, holdReason: "policy" }, { state: "held", reason: "held (code 26): policy" }],
  // Spool: always: condor_submit -spool holds each proc with code 16 until its input is spooled;
  // that is waiting to start, not a hold (docs/operator.md#following-the-procs).
  [{ proc: 0, jobStatus: 5, holdCode: 16, holdReason: "Spooling input data files" }, { state: "idle" }],
  [{ proc: 0, jobStatus: 5, holdCode: 34, holdSubCode: 102, holdReason: "memory" }, { state: "failed", reason: "held (code 34.102): memory" }],
])("procState(%j) is %j", (ad, want) => {
  expect(procState(ad, TERMINAL)).toEqual(want as never);
});

test("counts, jobid and conditions; an exit code other than 0 is named", () => {
  const s = htcjobStatus({
    generation: 2,
    procs: 4,
    cluster: 12,
    states: [{ state: "succeeded", exitCode: 0 }, { state: "failed", exitCode: 3, reason: "exited with code 3" }, { state: "running" }, { state: "held" }],
  });
  expect(s).toMatchObject({ jobid: ["12.0", "12.1", "12.2", "12.3"], clusterId: 12, idle: 0, running: 1, held: 1, active: 2, succeeded: 1, failed: 1 });
  expect(s.observedGeneration).toBe(2);
  expect(s.conditions.find((c) => c.type === "Failed")).toMatchObject({ status: "True", reason: "ProcFailed", message: "Proc 12.1 exited with code 3" });
  expect(s.conditions.find((c) => c.type === "Complete")).toMatchObject({ status: "False", reason: "Running" });
});

test("a refusal fails every proc, so that Argo's failureCondition fires", () => {
  const s = htcjobStatus({ generation: 1, procs: 3, states: [], refusal: { reason: "InvalidSpec", message: "spec.htcopts: x" } });
  expect(s).toMatchObject({ failed: 3, active: 0, jobid: [] });
  expect(statusEvents(undefined, carryTimes(s, undefined, "t"))).toEqual([{ type: "Warning", reason: "InvalidSpec", message: "spec.htcopts: x" }]);
});

test("unchanged status is not written again, and its events are not repeated", () => {
  const a = carryTimes(htcjobStatus({ generation: 1, procs: 1, cluster: 5, states: [{ state: "succeeded", exitCode: 0 }] }), undefined, "2025-01-01T00:00:00Z");
  const b = carryTimes(htcjobStatus({ generation: 1, procs: 1, cluster: 5, states: [{ state: "succeeded", exitCode: 0 }] }), a, "2025-01-02T00:00:00Z");
  expect(statusDiffers(b, JSON.parse(JSON.stringify(a)))).toBe(false);
  expect(statusEvents(a, b)).toEqual([]);
  expect(statusEvents(undefined, a).map((e) => e.reason)).toEqual(["Submitted", "Completed"]);
});

/** An in-memory database through the runtime adapter the operator opens its store with. */
const sqlite = () => bunRuntime.openSqlite(":memory:");

test("the store: a cluster is recorded once, only from submitting; outcomes finish the record", () => {
  const s = openHTCJobStore(sqlite());
  const rec = { uid: "u-1", namespace: "default", name: "q", generation: 1, dir: "/d/u-1", procs: 2, spooled: false };
  s.beginSubmit(rec, 1000);
  expect(s.get("u-1")).toMatchObject({ phase: "submitting", submitStartedAt: 1000 });
  s.recordCluster("u-1", 7, 2, 1001);
  expect(() => s.recordCluster("u-1", 8, 2, 1002)).toThrow(/not in a phase/);
  expect(() => s.beginSubmit(rec, 1003)).toThrow(/already submitted/);
  s.setOutcomes("u-1", [{ state: "succeeded", exitCode: 0 }, null], 1004);
  expect(s.get("u-1")!.phase).toBe("submitted");
  s.setOutcomes("u-1", [{ state: "succeeded", exitCode: 0 }, { state: "failed", exitCode: 3 }], 1005);
  expect(s.get("u-1")).toMatchObject({ phase: "finished", cluster: 7 });
  expect(s.byName("default", "q")!.uid).toBe("u-1");
});
