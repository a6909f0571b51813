// Job ads + state lines → PodStatus: the rules of docs/interlink.md#the-status-response,
// docs/interlink.md#what-the-virtual-kubelet-does-with-a-status,
// docs/interlink.md#unknown-and-in-flight-pods and docs/interlink.md#check-19,
// docs/interlink.md#check-20, docs/interlink.md#check-21, docs/interlink.md#check-22.
import { describe, expect, test } from "bun:test";
import type { JobAd } from "../../src/core/classad.ts";
import { formatStateLine, type StateLine } from "../../src/core/state-line.ts";
import { type ContainerStatus, type PodIdentity, podStatus } from "../../src/core/status.ts";

const pod: PodIdentity = {
  uid: "u1",
  name: "web",
  namespace: "default",
  jid: "7.0",
  containers: [
    { name: "setup", init: true, image: "docker://busybox" },
    { name: "migrate", init: true, image: "docker://busybox" },
    { name: "main", init: false, image: "docker://nginx" },
    { name: "side", init: false, image: "docker://busybox" },
  ],
};
const T0 = 1_795_332_741;
const term = (exitCode: number, reason = exitCode === 0 ? "Completed" : "Error"): StateLine => ({
  state: "terminated",
  exitCode,
  reason,
  startedAt: T0,
  finishedAt: T0 + 5,
  ready: false,
  restartCount: 0,
});
const running: StateLine = { state: "running", startedAt: T0, ready: true, restartCount: 0 };
const ad = (extra: JobAd): JobAd => ({ ClusterId: 7, ProcId: 0, JobStatus: 2, ...extra });
const state = (c: ContainerStatus) => Object.keys(c.state)[0];

function checkShape(s: ReturnType<typeof podStatus>) {
  // docs/interlink.md#check-18, docs/interlink.md#check-19, docs/interlink.md#check-20
  expect(s.name).toBe("web");
  expect(s.UID).toBe("u1");
  expect(s.namespace).toBe("default");
  expect(s.JID).toBe("7.0");
  expect(s.initContainers.map((c) => c.name)).toEqual(["setup", "migrate"]);
  expect(s.containers.map((c) => c.name)).toEqual(["main", "side"]);
  for (const c of [...s.initContainers, ...s.containers]) {
    expect(Object.keys(c.state).length).toBe(1);
    expect(typeof c.ready).toBe("boolean");
    expect(Number.isInteger(c.restartCount)).toBe(true);
    const t = c.state.terminated;
    if (t) {
      expect(Number.isInteger(t.exitCode)).toBe(true);
      for (const ts of [t.startedAt, t.finishedAt]) if (ts !== undefined) expect(ts).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    }
  }
}

describe("podStatus", () => {
  test("create in flight: every container waiting ContainerCreating (docs/interlink.md#unknown-and-in-flight-pods)", () => {
    const s = podStatus(pod, { kind: "creating" });
    checkShape(s);
    expect([...s.initContainers, ...s.containers].every((c) => c.state.waiting?.reason === "ContainerCreating")).toBe(true);
  });

  test("idle job: waiting for a slot", () => {
    const s = podStatus(pod, { kind: "queued", ad: ad({ JobStatus: 1 }) });
    checkShape(s);
    expect(s.containers[0]!.state.waiting?.message).toMatch(/slot/);
  });

  test("spooling hold (code 16) reads as ContainerCreating, not JobHeld (docs/htcondor.md#condor_submit-options)", () => {
    const s = podStatus(pod, { kind: "queued", ad: ad({ JobStatus: 5, HoldReasonCode: 16, HoldReason: "Spooling input data files" }) });
    expect(s.containers[0]!.state.waiting?.reason).toBe("ContainerCreating");
  });

  test("other holds: JobHeld with the reason", () => {
    const s = podStatus(pod, { kind: "queued", ad: ad({ JobStatus: 5, HoldReasonCode: 1, HoldReason: "via condor_hold (by user alice)" }) });
    expect(s.containers[1]!.state.waiting).toEqual({ reason: "JobHeld", message: "via condor_hold (by user alice) (HoldReasonCode 1)" });
  });

  test("running: per-container lines from the chirped attributes; later init containers wait", () => {
    const s = podStatus(pod, {
      kind: "queued",
      ad: ad({ InterLinkInit0State: formatStateLine(term(0)), InterLinkInit1State: formatStateLine(running) }),
    });
    checkShape(s);
    expect(s.initContainers.map(state)).toEqual(["terminated", "running"]);
    expect(s.containers.map((c) => c.state.waiting?.reason)).toEqual(["PodInitializing", "PodInitializing"]);
  });

  test("an init container cannot run ahead of an earlier one (docs/interlink.md#what-the-virtual-kubelet-does-with-a-status)", () => {
    const s = podStatus(pod, { kind: "queued", ad: ad({ InterLinkInit1State: formatStateLine(running) }) });
    expect(s.initContainers.map(state)).toEqual(["waiting", "waiting"]);
  });

  test("running containers: running with RFC 3339 start, ready from the line", () => {
    const s = podStatus(pod, {
      kind: "queued",
      ad: ad({
        InterLinkInit0State: formatStateLine(term(0)),
        InterLinkInit1State: formatStateLine(term(0)),
        InterLinkCtr0State: formatStateLine(running),
        InterLinkCtr1State: formatStateLine({ ...running, ready: false }),
      }),
    });
    expect(s.containers[0]!.state.running?.startedAt).toBe("2026-11-22T07:32:21Z");
    expect(s.containers.map((c) => c.ready)).toEqual([true, false]);
  });

  test("a running job never reports every container terminated... until it ends (docs/interlink.md#check-22)", () => {
    const lines = new Map([["i.setup", term(0)], ["i.migrate", term(0)], ["c.main", term(0)], ["c.side", term(3)]]);
    const s = podStatus(pod, { kind: "ended", ad: ad({ JobStatus: 4, ExitCode: 3, ExitBySignal: false }), lines });
    checkShape(s);
    expect(s.containers.map((c) => c.state.terminated?.exitCode)).toEqual([0, 3]);
  });

  test("ended without state files: the job's exit code for every container", () => {
    const s = podStatus(pod, { kind: "ended", ad: ad({ JobStatus: 4, ExitCode: 0, ExitBySignal: false }), lines: new Map() });
    expect([...s.initContainers, ...s.containers].map((c) => c.state.terminated?.exitCode)).toEqual([0, 0, 0, 0]);
  });

  test("killed by a signal: 128 + signal", () => {
    const s = podStatus(pod, { kind: "ended", ad: ad({ JobStatus: 4, ExitBySignal: true, ExitSignal: 9 }), lines: new Map() });
    expect(s.containers[0]!.state.terminated?.exitCode).toBe(137);
  });

  test("removed jobs never read as Succeeded (docs/interlink.md#what-the-virtual-kubelet-does-with-a-status, docs/interlink.md#p9)", () => {
    const s = podStatus(pod, { kind: "ended", ad: ad({ JobStatus: 3, RemoveReason: "via condor_rm (by user bob)" }), lines: new Map([["c.main", running]]) });
    checkShape(s);
    for (const c of [...s.initContainers, ...s.containers]) {
      expect(c.state.terminated?.exitCode).not.toBe(0);
    }
    expect(s.containers[0]!.state.terminated?.message).toBe("via condor_rm (by user bob)");
  });

  test("removed while running: the containers the wrapper stopped on the removal's SIGTERM read JobRemoved, with their own exit code (docs/status.md#what-each-pod-reports)", () => {
    // The starter sends the job SIGTERM on condor_rm; the wrapper stops its containers and its last
    // chirp (reason Killed, signal 15) can land before the ad leaves the queue.
    const stopped = { ...term(143), reason: "Killed", signal: 15 };
    const lines = new Map([["i.setup", term(0)], ["i.migrate", term(0)], ["c.main", stopped], ["c.side", term(0)]]);
    const s = podStatus(pod, { kind: "ended", ad: ad({ JobStatus: 3, RemoveReason: "via condor_rm (by user bob)" }), lines });
    checkShape(s);
    expect(s.containers[0]!.state.terminated).toMatchObject({ reason: "JobRemoved", exitCode: 143, signal: 15, message: "via condor_rm (by user bob)" });
    // A container that had ended on its own before the removal keeps its line.
    expect(s.containers[1]!.state.terminated).toMatchObject({ reason: "Completed", exitCode: 0 });
  });

  test("lost job: terminated non-zero with a reason (docs/interlink.md#unknown-and-in-flight-pods)", () => {
    const s = podStatus(pod, { kind: "lost", message: "gone" });
    expect(s.containers.every((c) => c.state.terminated?.reason === "JobLost" && c.state.terminated.exitCode === 1)).toBe(true);
  });

  test("a failed init container terminates every later container non-zero (docs/interlink.md#what-the-virtual-kubelet-does-with-a-status)", () => {
    const s = podStatus(pod, { kind: "queued", ad: ad({ InterLinkInit0State: formatStateLine(term(2)) }) });
    checkShape(s);
    expect(s.initContainers.map((c) => c.state.terminated?.exitCode)).toEqual([2, 2]);
    expect(s.containers.map((c) => c.state.terminated?.reason)).toEqual(["InitContainerFailed", "InitContainerFailed"]);
    expect(s.containers.every((c) => (c.state.terminated?.exitCode ?? 0) !== 0)).toBe(true);
  });

  test("unrecoverable hold removed by the sidecar: terminated with the mapped reason", () => {
    const s = podStatus(pod, { kind: "failed", reason: "OOMKilled", message: "memory", exitCode: 137, lines: new Map() });
    expect(s.containers[0]!.state.terminated).toMatchObject({ exitCode: 137, reason: "OOMKilled" });
  });

  test("restarts: lastState and restartCount come from the line", () => {
    const line: StateLine = {
      state: "waiting",
      reason: "CrashLoopBackOff",
      ready: false,
      restartCount: 2,
      last: { exitCode: 1, reason: "Error", startedAt: T0, finishedAt: T0 + 1 },
    };
    const s = podStatus({ ...pod, containers: [{ name: "main", init: false, image: "x" }] }, {
      kind: "queued",
      ad: ad({ InterLinkCtr0State: formatStateLine(line) }),
    });
    expect(s.containers[0]).toMatchObject({
      restartCount: 2,
      state: { waiting: { reason: "CrashLoopBackOff" } },
      lastState: { terminated: { exitCode: 1, reason: "Error" } },
    });
  });
});

test("every container terminated while the job is still in the queue: the last one reads running (docs/interlink.md#check-22)", () => {
  const lines = {
    InterLinkInit0State: formatStateLine(term(0)),
    InterLinkInit1State: formatStateLine(term(0)),
    InterLinkCtr0State: formatStateLine({ ...term(0), finishedAt: T0 + 9 }),
    InterLinkCtr1State: formatStateLine({ ...term(0), finishedAt: T0 + 5 }),
  };
  const s = podStatus(pod, { kind: "queued", ad: ad(lines) });
  expect(s.containers.map(state)).toEqual(["running", "terminated"]);
  expect(s.containers[0]!.ready).toBe(false);
});
