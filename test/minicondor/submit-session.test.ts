// A schedd serves one submit at a time (docs/htcondor.md#one-submit-at-a-time): minicondor's
// condor_submit holds the queue from its first job to its commit, and the next one waits.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { measureLoad, scaled, TEARDOWN_TIMEOUT_MS } from "../helpers/sidecar.ts";
import { cleanup, createHome, runTool, toolEnv, toolPath, waitFor } from "./src/testkit.ts";

// Every test here starts several tool processes: seconds on a busy machine, more than bun's
// default 5 s. The timeouts scale with the load measured now.
await measureLoad();
const TIMEOUT_MS = scaled(60_000);

const HOLD_MS = 400;
let home: string;

beforeAll(() => {
  home = createHome({ cpus: 1 });
});
afterAll(() => cleanup(home, true), TEARDOWN_TIMEOUT_MS);

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
  return lockLines().some((l) => /^\d+: FLOCK /.test(l));
}

/** Whether a condor_submit waits for the queue now: a blocked flock on submit.lock ("->" in /proc/locks). */
function queueAwaited(): boolean {
  return lockLines().some((l) => /^\d+: -> FLOCK /.test(l));
}

/** The lines of /proc/locks about submit.lock. */
function lockLines(): string[] {
  const lock = join(home, "submit.lock");
  if (!existsSync(lock)) return [];
  const ino = statSync(lock).ino;
  return readFileSync("/proc/locks", "utf8").split("\n").filter((l) => l.includes(`:${ino} `));
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
}, TIMEOUT_MS);

test("a condor_submit killed while it waits for the queue dies at once and commits nothing", async () => {
  const before = submitSpans().length;
  const order: string[] = [];
  // The holder keeps the queue far longer than the waiter takes to start, wait and die: ten times
  // a tool call measured now (a process start, seconds on a busy machine), never under 3 s.
  const t0 = performance.now();
  expect((await runTool(home, "condor_version", [], { env: { MINICONDOR_ALLOW_ROOT: "1" } })).code).toBe(0);
  const holdMs = Math.max(3000, Math.round(10 * (performance.now() - t0)));
  const holder = submit({ MINICONDOR_FAULT_CONDOR_SUBMIT: `slowcommit:${holdMs}` }).then((r) => (order.push("holder"), r));
  await waitFor(queueHeld, scaled(10_000), 20);
  // Killed (SIGTERM) by its caller while it waits for the holder's session: seen waiting first, so
  // that a slow start cannot have it killed before it reached the queue.
  const proc = Bun.spawn([toolPath("condor_submit"), "-terse", "-"], {
    cwd: home,
    env: toolEnv(home, { MINICONDOR_ALLOW_ROOT: "1" }),
    stdin: new TextEncoder().encode("executable = /bin/sleep\narguments = 600\nqueue\n"),
    stdout: "pipe",
    stderr: "pipe",
  });
  const waiter = Promise.all([new Response(proc.stdout).text(), proc.exited]).then(([stdout, code]) => (order.push("waiter"), { stdout, code }));
  await waitFor(queueAwaited, scaled(10_000), 20);
  proc.kill("SIGTERM");
  const [h, w] = await Promise.all([holder, waiter]);
  expect(order).toEqual(["waiter", "holder"]);
  expect(h.code).toBe(0);
  expect(w.code).not.toBe(0);
  expect(w.stdout).toBe("");
  // Only the holder's call ended on its own (a killed process writes no line).
  expect(submitSpans().length).toBe(before + 1);
  const q = await runTool(home, "condor_q", ["-json", "-attributes", "ClusterId"], { env: { MINICONDOR_ALLOW_ROOT: "1" } });
  expect((JSON.parse(q.stdout) as { ClusterId: number }[]).map((a) => a.ClusterId).sort()).toEqual([1, 2, 3, 4, 5]);
}, TIMEOUT_MS);
