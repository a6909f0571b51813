// A container that outgrows its memory on a pool that enforces memory (docs/status.md#memory-kills,
// docs/logs.md#a-job-killed-for-memory): interLink's vk-test-set case 100-oom-simulation, a
// python container with a 50Mi limit that allocates 200 MB, on minicondor with enforceMemory.
import { describe, expect, test } from "bun:test";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { eventually, sidecars } from "../helpers/sidecar.ts";

const { start } = sidecars();

const HOG = [
  "import sys",
  'print("Attempting to allocate memory beyond limit", flush=True)',
  'print("to stderr too", file=sys.stderr, flush=True)',
  'data = b"x" * (200 * 1024 * 1024)',
  'print("allocated", len(data), flush=True)',
].join("\n");

const oomPod = (uid: string) =>
  makeCreateRequest({
    metadata: { name: "oom-simulation", uid },
    spec: {
      restartPolicy: "Never",
      containers: [{
        name: "memory-hog",
        image: "python:3.12-slim",
        command: ["python3", "-c", HOG],
        resources: { limits: { memory: "50Mi" }, requests: { memory: "50Mi" } },
      }],
    },
  });

describe("100-oom-simulation on a pool that enforces memory (docs/status.md#memory-kills)", () => {
  test("the container reads terminated OOMKilled 137 with HTCondor's hold reason; its log keeps what it printed before the kill", async () => {
    const sc = await start({ config: "HoldGraceSeconds: 2\n", env: { MINICONDOR_ENFORCE_MEMORY: "1" } });
    const r = oomPod("44440000-0000-4000-8000-000000000001");
    expect((await sc.call("POST", "/create", r)).status).toBe(200);
    // held for memory: JobHeld with the reason while the grace period lasts, and the log already
    // readable although a held job sends no output back
    const held = await eventually(
      async () => {
        const st = await sc.statusOf(r.pod);
        const c = st?.containers[0].state;
        return c?.waiting?.reason === "JobHeld" || c?.terminated ? st : undefined;
      },
      60_000,
      "the job held for memory",
    );
    if (held.containers[0].state.waiting) {
      expect(held.containers[0].state.waiting.message).toMatch(/gone over cgroup memory limit of 50 megabytes.*\(HoldReasonCode 34\)$/);
    }
    const s = await eventually(
      async () => {
        const st = await sc.statusOf(r.pod);
        return st?.containers[0].state.terminated ? st : undefined;
      },
      60_000,
      "the pod to end after the grace period",
    );
    expect(s.containers[0].state.terminated).toMatchObject({ exitCode: 137, reason: "OOMKilled" });
    expect(s.containers[0].state.terminated.message).toMatch(
      /^Error from slot1_\d+@\S+: Job has gone over cgroup memory limit of 50 megabytes\. Last measured usage: 50 megabytes\. {2}Consider resubmitting with a higher request_memory\.$/,
    );
    // the wrapper puts the log in the pod folder once it has seen the container end
    const logs = await eventually(
      async () => {
        const l = (await sc.logs(r.pod, "memory-hog", {})).body;
        return l.includes("Attempting") ? l : undefined;
      },
      30_000,
      "the log kept from the killed container",
    );
    expect(logs).toContain("Attempting to allocate memory beyond limit\n");
    expect(logs).toContain("to stderr too\n");
    expect(logs).not.toContain("allocated ");
  }, 150_000);
});
