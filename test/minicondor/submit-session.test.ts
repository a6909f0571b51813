// A schedd serves one submit at a time (docs/htcondor.md#one-submit-at-a-time): minicondor's
// condor_submit holds the queue from its first job to its commit, and the next one waits.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { cleanup, createHome, runTool, waitFor } from "./src/testkit.ts";

const HOLD_MS = 400;
let home: string;

beforeAll(() => {
  home = createHome({ cpus: 1 });
});
afterAll(() => cleanup(home, true));

const submit = (env: Record<string, string> = {}, timeoutMs?: number) =>
  runTool(home, "condor_submit", ["-terse", "-"], {
    stdin: "executable = /bin/sleep\narguments = 600\nqueue\n",
    env: { MINICONDOR_ALLOW_ROOT: "1", ...env },
    timeoutMs,
  });

/** condor_submit lines of calls.log ("<end ISO time> <tool> <argv> <ms> <code>"): when each began and ended. */
function submitSpans(): { start: number; end: number }[] {
  return readFileSync(join(home, "calls.log"), "utf8").split("\n").filter((l) => l.split(" ")[1] === "condor_submit").map((l) => {
    const parts = l.split(" ");
    const end = Date.parse(parts[0]!);
    return { start: end - Number(parts.at(-2)), end };
  });
}

/** Whether a condor_submit holds the queue now: a granted flock on submit.lock in /proc/locks (a waiter's line has "->"). */
function queueHeld(): boolean {
  const lock = join(home, "submit.lock");
  if (!existsSync(lock)) return false;
  const ino = statSync(lock).ino;
  return readFileSync("/proc/locks", "utf8").split("\n").some((l) => /^\d+: FLOCK /.test(l) && l.includes(`:${ino} `));
}

test("concurrent condor_submit commit one after another, and every one waits for its turn without failing", async () => {
  // Each session holds the queue HOLD_MS (fault slowcommit): four at once cannot end sooner than
  // four sessions after the first began. Without the session lock they sleep side by side.
  const results = await Promise.all(Array.from({ length: 4 }, () => submit({ MINICONDOR_FAULT_CONDOR_SUBMIT: `slowcommit:${HOLD_MS}` })));
  expect(results.map((r) => [r.code, r.stderr])).toEqual(results.map(() => [0, ""]));
  expect(results.map((r) => r.stdout.trim()).sort()).toEqual(["1.0 - 1.0", "2.0 - 2.0", "3.0 - 3.0", "4.0 - 4.0"]);
  const spans = submitSpans();
  expect(spans.length).toBe(4);
  const first = Math.min(...spans.map((s) => s.start));
  const last = Math.max(...spans.map((s) => s.end));
  expect(last - first).toBeGreaterThanOrEqual(4 * HOLD_MS);
});

test("a condor_submit killed while it waits for the queue dies at once and commits nothing", async () => {
  const before = submitSpans().length;
  const order: string[] = [];
  const holder = submit({ MINICONDOR_FAULT_CONDOR_SUBMIT: "slowcommit:3000" }).then((r) => (order.push("holder"), r));
  await waitFor(queueHeld, 10_000, 20);
  // Killed (SIGTERM) by its caller's timeout while the holder's session lasts.
  const waiter = submit({}, 1000).then((r) => (order.push("waiter"), r));
  const [h, w] = await Promise.all([holder, waiter]);
  expect(order).toEqual(["waiter", "holder"]);
  expect(h.code).toBe(0);
  expect(w.code).not.toBe(0);
  expect(w.stdout).toBe("");
  // Only the holder's call ended on its own (a killed process writes no line).
  expect(submitSpans().length).toBe(before + 1);
  const q = await runTool(home, "condor_q", ["-json", "-attributes", "ClusterId"], { env: { MINICONDOR_ALLOW_ROOT: "1" } });
  expect((JSON.parse(q.stdout) as { ClusterId: number }[]).map((a) => a.ClusterId).sort()).toEqual([1, 2, 3, 4, 5]);
});
