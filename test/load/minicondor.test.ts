// Load on the emulator: many jobs at once (docs/development.md#tests-that-measure-load). Not part of
// `npm test`: run with `npm run test:load`. What they check is that everything completes, not how fast.
import { afterAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { cleanup, createHome, homePids, runTool, waitFor } from "../minicondor/src/testkit.ts";

const ENV = { MINICONDOR_ALLOW_ROOT: "1" };
const homes: string[] = [];

afterAll(() => {
  for (const h of homes) cleanup(h, true);
});

describe("minicondor under load", () => {
  test("200 jobs (one cluster of 150 + 50 concurrent submits) all complete, and nothing is left", async () => {
    const home = createHome({ scheddIdleExitMs: 1500, pollMs: 50 });
    const work = fs.mkdtempSync(path.join(home, "..", "mcwork-"));
    homes.push(home, work);
    const run = (tool: string, args: string[]) => runTool(home, tool, args, { cwd: work, env: ENV });
    const sub = (name: string, text: string) => {
      fs.writeFileSync(path.join(work, name), text);
      return name;
    };
    fs.mkdirSync(path.join(work, "load"), { recursive: true });
    const big = await run("condor_submit", [
      "-terse",
      sub("big.sub", "executable = /bin/echo\narguments = $(Process)\noutput = load/out.$(Process)\nshould_transfer_files = YES\nqueue 150\n"),
    ]);
    expect([big.code, big.stderr]).toEqual([0, ""]);
    expect(big.stdout).toMatch(/^(\d+)\.0 - \1\.149\n$/);
    sub("one.sub", "executable = /bin/true\nqueue\n");
    const rs = await Promise.all(Array.from({ length: 50 }, () => run("condor_submit", ["-terse", "one.sub"])));
    expect(rs.every((r) => r.code === 0)).toBe(true);
    const clusters = new Set(rs.map((r) => r.stdout.split(".")[0]));
    expect(clusters.size).toBe(50);
    // A deadline against a hang only: the time taken is the benchmark's business.
    await waitFor(async () => (await run("condor_q", ["-allusers", "-af", "ClusterId"])).stdout === "", 240_000, 300);
    const n = (await run("condor_history", ["-af", "ExitCode"])).stdout.trim().split("\n");
    expect(n.length).toBe(200);
    expect(n.every((x) => x === "0")).toBe(true);
    expect(fs.readFileSync(path.join(work, "load", "out.149"), "utf8")).toBe("149\n");
    // The schedd exits once idle: no process of this home is left.
    await waitFor(() => homePids(home).length === 0, 60_000);
  }, 300_000);
});
