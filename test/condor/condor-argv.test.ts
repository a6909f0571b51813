// The command lines src/condor/tools.ts builds (docs/threat-model.md#8-a-pods-name-read-as-an-option): what each tool reads as an option is
// only what the sidecar means as one. A tool takes an argument that starts with `-` for an option
// (docs/htcondor.md#conventions-of-every-tool), and condor_submit has no `--` to end them
// (docs/htcondor.md#condor_submit-options): files go as `./name`, and a job id that is not two
// whole numbers or a file that starts with `-` is refused before anything runs.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RmOutcome } from "../../src/condor/parse.ts";
import { type Condor, createCondor } from "../../src/condor/tools.ts";
import { SidecarError } from "../../src/core/errors.ts";
import { type CliOptions, condorAccess, parseCli } from "../../src/flags.ts";
import { memoryLogger } from "../helpers/memory-logger.ts";
import type { Runtime, SpawnResult } from "../../src/runtime/types.ts";
import { writeBatchFile } from "../../src/store/files.ts";

/** A condor whose every run answers `stdout` with exit 0; `argv` collects the command lines (tool name first). */
/** A Condor whose tools print `stdout` (each call the next of a list, when it is one). */
function recording(outputs: string | string[]): { condor: Condor; argv: string[][]; cwd: (string | undefined)[] } {
  const argv: string[][] = [];
  const cwd: (string | undefined)[] = [];
  const runtime = {
    spawn: (o: { argv: string[]; cwd?: string }): Promise<SpawnResult> => {
      const stdout = typeof outputs === "string" ? outputs : outputs[argv.length] ?? "";
      argv.push([o.argv[0]!.split("/").pop()!, ...o.argv.slice(1)]);
      cwd.push(o.cwd);
      return Promise.resolve({ code: 0, signal: null, stdout, stdoutBytes: new TextEncoder().encode(stdout), stderr: "", timedOut: false, durationMs: 1 });
    },
  } as unknown as Runtime;
  const condor = createCondor({
    runtime,
    bin: "/opt/condor/bin",
    access: condorAccess(runOptions([]), "localhost"),
    baseEnv: {},
    submitTimeoutMs: 1000,
    queryTimeoutMs: 1000,
    log: memoryLogger(),
  });
  return { condor, argv, cwd };
}

/** The options of a sidecar started with these flags. */
function runOptions(argv: string[]): CliOptions {
  const cli = parseCli(argv);
  if (cli.kind !== "run") throw new Error(`not a run: ${cli.kind}`);
  return cli.options;
}

const id = { cluster: 12, proc: 3 };

describe("the tools' command lines (docs/threat-model.md#8-a-pods-name-read-as-an-option)", () => {
  test.each([
    ["a pod alone", "/data/pods/-rf/job.sub", ["condor_submit", "-terse", "./job.sub"], "/data/pods/-rf"],
    ["a batch", "/data/batches/batch-7.sub", ["condor_submit", "-terse", "./batch-7.sub"], "/data/batches"],
  ])("condor_submit of %s: the file as ./name, from its folder", async (_what, file, want, dir) => {
    const r = recording("12.0 - 12.0\n");
    await r.condor.submit(file, { spool: false, podOptions: false, count: 1 });
    expect(r.argv).toEqual([want]);
    expect(r.cwd).toEqual([dir]);
  });

  test("every call: options, then values the tool reads as data", async () => {
    const r = recording("[\n]\n");
    await r.condor.query({ constraint: 'InterLinkPodUID == "-rf"', attributes: ["ClusterId"] });
    await r.condor.history({ ids: [id], attributes: ["ClusterId"], limit: 1, scanLimit: 5, constraint: "true" });
    await r.condor.transferData([{ id, constraint: "ClusterId == 12 && ProcId == 3" }]);
    await r.condor.tail(id, "c.main.log", 100, 1000);
    expect(r.argv).toEqual([
      ["condor_q", "-json", "-attributes", "ClusterId", "-constraint", 'InterLinkPodUID == "-rf"'],
      ["condor_history", "12.3", "-json", "-attributes", "ClusterId", "-limit", "1", "-scanlimit", "5", "-constraint", "true"],
      ["condor_transfer_data", "-constraint", "ClusterId == 12 && ProcId == 3"],
      ["condor_tail", "-no-stdout", "-maxbytes", "100", "12.3", "c.main.log"],
    ]);
    const rm = recording("1 Succeeded, 0 Failed, 0 Not Found, 0 Bad Status, 0 Already Done, 0 Permission Denied\n");
    expect(await rm.condor.remove([{ id, constraint: "ClusterId == 12 && ProcId == 3" }], "-rf")).toEqual(new Map([["12.3", "removed"]]));
    // condor_rm takes the word after -reason as the reason, whatever it starts with (tool.cpp);
    // the job is named by its constraint alone: next to a job id the tool ignores it
    // (docs/htcondor.md#a-constraint-not-a-job-id).
    expect(rm.argv).toEqual([["condor_rm", "-totals", "-reason", "-rf", "-constraint", "ClusterId == 12 && ProcId == 3"]]);
  });

  test.each<[string, (c: Condor) => Promise<unknown>]>([
    ["condor_rm of a negative cluster", (c) => c.remove([{ id: { cluster: -1, proc: 0 }, constraint: "true" }], "why")],
    ["condor_transfer_data of a negative cluster", (c) => c.transferData([{ id: { cluster: -5, proc: 0 }, constraint: "true" }])],
    ["condor_history of a negative cluster", (c) => c.history({ ids: [{ cluster: -5, proc: 0 }], attributes: ["ClusterId"], limit: 1 })],
    ["condor_tail of a negative proc", (c) => c.tail({ cluster: 1, proc: -1 }, "c.main.log", 1, 1000)],
    ["condor_tail of a fractional proc", (c) => c.tail({ cluster: 1, proc: 0.5 }, "c.main.log", 1, 1000)],
    ["condor_tail of a file that starts with -", (c) => c.tail(id, "-f", 1, 1000)],
  ])("%s is refused before anything runs", async (_what, call) => {
    const r = recording("");
    const err = await call(r.condor).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(SidecarError);
    expect((err as SidecarError).message).toMatch(/^Refusing to run condor_\w+ with /);
    expect(r.argv).toEqual([]);
  });
});

describe("batch files (docs/threat-model.md#8-a-pods-name-read-as-an-option)", () => {
  test("are named by the submitter's counter, and never replace a file an earlier run left", () => {
    const root = mkdtempSync(join(tmpdir(), "batch-files-"));
    try {
      let n = 0;
      const next = () => ++n;
      expect(writeBatchFile(root, next, "one")).toBe(join(root, "batches", "batch-1.sub"));
      // batch-2.sub is an earlier run's, perhaps still read by its orphaned condor_submit.
      writeFileSync(join(root, "batches", "batch-2.sub"), "left");
      expect(writeBatchFile(root, next, "three")).toBe(join(root, "batches", "batch-3.sub"));
      expect(readFileSync(join(root, "batches", "batch-2.sub"), "utf8")).toBe("left");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("condor_rm by constraint: each job's outcome from the counts (docs/htcondor.md#a-constraint-not-a-job-id)", () => {
  const totals = (ok: number, denied = 0, already = 0) =>
    `${ok} Succeeded, 0 Failed, 0 Not Found, 0 Bad Status, ${already} Already Done, ${denied} Permission Denied\n`;
  const jobs = [1, 2, 3].map((c) => ({ id: { cluster: c, proc: 0 }, constraint: `ClusterId == ${c} && ProcId == 0` }));
  test.each<[string, string[], Record<string, RmOutcome>, number]>([
    ["all removed: one call", [totals(3)], { "1.0": "removed", "2.0": "removed", "3.0": "removed" }, 1],
    ["none matched (gone or leaving)", [totals(0)], { "1.0": "not_found", "2.0": "not_found", "3.0": "not_found" }, 1],
    ["some removed, none refused: removed or gone, the counts do not say which", [totals(2)], { "1.0": "done", "2.0": "done", "3.0": "done" }, 1],
    ["a refusal among removals: asked again job by job", [totals(2, 1), totals(0), totals(0, 1), totals(0)], {
      "1.0": "done",
      "2.0": "denied",
      "3.0": "done",
    }, 4],
  ])("%s", async (_what, outs, want, calls) => {
    const r = recording(outs);
    expect(Object.fromEntries(await r.condor.remove(jobs, "why"))).toEqual(want);
    expect(r.argv).toHaveLength(calls);
    expect(r.argv[0]).toEqual(["condor_rm", "-totals", "-reason", "why", "-constraint", jobs.map((j) => `(${j.constraint})`).join(" || ")]);
  });
});
