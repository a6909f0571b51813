// Several schedds in one pool, each stoppable on its own: the fidelity of minicondor against what a real
// HTCondor 25.0 printed (docs/htcondor.md#several-schedds-in-one-pool).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { measureLoad, scaled, TEARDOWN_TIMEOUT_MS } from "../helpers/sidecar.ts";
import { cleanup, createHome, resetQueue, runTool, startSchedd, stopSchedd, waitFor } from "./src/testkit.ts";

// Each test runs up to a dozen tool calls, each a process start: together more than bun's default
// 5 s on a busy machine. The timeouts scale with the load measured now (test/helpers/sidecar.ts).
await measureLoad();
const TIMEOUT_MS = scaled(60_000);

const ENV = { MINICONDOR_ALLOW_ROOT: "1" };
let home = "";
const HOST = "localhost";
const SECOND = `second@${HOST}`;
const run = (tool: string, args: string[]) => runTool(home, tool, args, { env: ENV });

beforeAll(() => {
  home = createHome({ host: HOST, schedds: ["second", "third"], scheddIdleExitMs: 1500, pollMs: 50 });
  // Jobs that stay in the queue until cleanup kills them: a job that ends on its own (it slept 30 s)
  // leaves the queue while a test on a busy machine still counts on it.
  fs.writeFileSync(path.join(home, "e.sub"), "executable = /bin/sleep\narguments = 600\nqueue\n");
});
afterAll(() => cleanup(home, true), TEARDOWN_TIMEOUT_MS);

const submit = (name?: string) => run("condor_submit", [...(name ? ["-name", name] : []), "-terse", path.join(home, "e.sub")]);
const clusters = async (name?: string) => (await run("condor_q", [...(name ? ["-name", name] : []), "-af", "ClusterId", "GlobalJobId"])).stdout;

describe("several schedds in one pool (docs/htcondor.md#several-schedds-in-one-pool)", () => {
  test("each schedd hands out its own cluster ids and keeps its own queue", async () => {
    expect(await submit()).toEqual({ code: 0, stdout: "1.0 - 1.0\n", stderr: "" });
    expect(await submit(SECOND)).toEqual({ code: 0, stdout: "1.0 - 1.0\n", stderr: "" });
    expect(await submit(SECOND)).toEqual({ code: 0, stdout: "2.0 - 2.0\n", stderr: "" });
    expect(await clusters()).toMatch(/^1 localhost#1\.0#\d+\n$/);
    expect(await clusters(SECOND)).toMatch(/^1 second@localhost#1\.0#\d+\n2 second@localhost#2\.0#\d+\n$/);
    expect(await clusters(`third@${HOST}`)).toBe("");
    // the same id on two schedds: removing it on one leaves the other's
    expect((await run("condor_rm", ["-name", SECOND, "1.0"])).code).toBe(0);
    expect(await clusters()).toMatch(/^1 /);
    await waitFor(async () => (await run("condor_history", ["-name", SECOND, "1.0", "-af", "JobStatus"])).stdout === "3\n", scaled(10_000));
    expect((await run("condor_history", ["1.0", "-af", "JobStatus"])).stdout).toBe("");
  }, TIMEOUT_MS);

  test("condor_status -schedd lists every schedd that runs", async () => {
    expect((await run("condor_status", ["-schedd", "-af", "Name"])).stdout).toBe("localhost\nsecond@localhost\nthird@localhost\n");
  }, TIMEOUT_MS);

  test("a stopped schedd: each tool prints what the real one printed; the others and the collector answer", async () => {
    stopSchedd(home, "second");
    try {
      expect(await submit(SECOND)).toEqual({ code: 1, stdout: "", stderr: "\nERROR: Can't find address of schedd second@localhost\n" });
      expect(await run("condor_q", ["-name", SECOND, "-af", "ClusterId"])).toEqual({
        code: 1,
        stdout: "",
        stderr: "Error: Collector has no record of schedd/submitter\n",
      });
      expect(await run("condor_rm", ["-name", SECOND, "2.0"])).toEqual({ code: 1, stdout: "", stderr: "Error: cannot get address of schedd localhost\n" });
      // exit 0 although no schedd was reached
      expect(await run("condor_history", ["-name", SECOND, "-limit", "1"])).toEqual({
        code: 0,
        stdout: " ID     OWNER          SUBMITTED   RUN_TIME     ST COMPLETED   CMD\n",
        stderr: "Unable to locate remote schedd (name=second@localhost, pool=).\n",
      });
      expect((await run("condor_status", ["-schedd", "-af", "Name"])).stdout).toBe("localhost\nthird@localhost\n");
      expect((await submit(`third@${HOST}`)).code).toBe(0);
      expect((await submit()).code).toBe(0);
    } finally {
      startSchedd(home, "second");
    }
    // back, with its queue
    expect(await clusters(SECOND)).toMatch(/^2 second@localhost#2\.0#\d+\n$/);
  }, TIMEOUT_MS);

  test("the first schedd stopped: unnamed calls fail as for a local schedd that is down, named ones as for an unknown schedd", async () => {
    stopSchedd(home);
    try {
      expect(await run("condor_q", ["-af", "ClusterId"])).toMatchObject({
        code: 1,
        stderr: expect.stringMatching(/^Error: Could not find the local condor_schedd/),
      });
      expect(await run("condor_q", ["-name", HOST, "-af", "ClusterId"])).toEqual({
        code: 1,
        stdout: "",
        stderr: "Error: Collector has no record of schedd/submitter\n",
      });
      expect((await run("condor_status", ["-schedd", "-af", "Name"])).stdout).toBe("second@localhost\nthird@localhost\n");
      expect((await submit(SECOND)).code).toBe(0);
    } finally {
      startSchedd(home);
    }
  }, TIMEOUT_MS);
  test(
    "a reinstalled schedd: its queue and history are empty and ids start at 1 again, with a new GlobalJobId; the other schedds keep theirs (docs/htcondor.md#which-job-an-id-names)",
    async () => {
      const third = `third@${HOST}`;
      expect((await submit(third)).code).toBe(0);
      expect((await submit(third)).code).toBe(0);
      const before = (await run("condor_q", ["-name", third, "-af", "ClusterId", "GlobalJobId", "QDate"])).stdout;
      // (the tests before this one queued on it too)
      const lines = before.trimEnd().split("\n");
      expect(lines.length).toBeGreaterThanOrEqual(2);
      for (const l of lines) expect(l).toMatch(/^(\d+) third@localhost#\1\.0#(\d+) \2$/);
      const secondBefore = await clusters(SECOND);
      const running = await waitFor(async () => (await run("condor_q", ["-name", third, "1.0", "-af", "JobStatus"])).stdout === "2\n", 30_000);
      expect(running).toBe(true);
      const qdate = Math.max(...lines.map((l) => Number(l.split(" ")[2])));
      // A reinstall takes longer than a second: the new queue's jobs are queued in a later one.
      await waitFor(() => Math.floor(Date.now() / 1000) > qdate, 5_000, 50);
      resetQueue(home, "third");
      expect(await run("condor_q", ["-name", third, "-af", "ClusterId"])).toEqual({ code: 0, stdout: "", stderr: "" });
      expect((await run("condor_history", ["-name", third, "-af", "ClusterId"])).stdout).toBe("");
      expect(await submit(third)).toEqual({ code: 0, stdout: "1.0 - 1.0\n", stderr: "" });
      const after = (await run("condor_q", ["-name", third, "-af", "ClusterId", "GlobalJobId", "QDate"])).stdout;
      expect(after).toMatch(/^1 third@localhost#1\.0#(\d+) \1\n$/);
      // the same id, another job: what tells them apart is the queue time in GlobalJobId and QDate
      expect(after).not.toBe(lines[0] + "\n");
      expect(await clusters(SECOND)).toBe(secondBefore);
    },
    TIMEOUT_MS,
  );
});
