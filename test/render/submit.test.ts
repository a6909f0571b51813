import { describe, expect, test } from "bun:test";
import { submitKey, submitValueProblem } from "../../src/core/submit-rules.ts";
import { INITIAL_STATE_LINE, jobCommands, logFiles, renderBatch, renderSubmit, submitShape, submitString, submitValue } from "../../src/render/submit.ts";
import { SidecarError } from "../../src/core/errors.ts";
import { parseStateLine } from "../../src/core/state-line.ts";
import type { JobPlan } from "../../src/core/types.ts";
import { basePlan, container, minimalPlan, richPlan, withEnvFiles } from "./plans.ts";
import { expectGolden, submitCommands as commands } from "./golden.ts";

/** The pod folder a job is submitted from (its initialdir). */
const DIR = "/var/lib/htcondor-sidecar/pods/7c9e6679";

function get(text: string, key: string): string | undefined {
  return commands(text).find(([k]) => k === key)?.[1];
}

describe("renderSubmit golden files", () => {
  test("minimal plan", () => expectGolden("minimal.sub", renderSubmit(minimalPlan, DIR)));
  test("rich plan", () => expectGolden("rich.sub", renderSubmit(richPlan, DIR)));
  test("dummy plan", () => expectGolden("dummy.sub", renderSubmit({ ...minimalPlan, dummy: true }, DIR)));
  test("shared filesystem", () => expectGolden("shared-fs.sub", renderSubmit({ ...minimalPlan, sharedFilesystem: true }, DIR)));
});

describe("renderBatch: many pods in one condor_submit (docs/htcondor.md#submitting-many-pods-at-once)", () => {
  const job = (uid: string, over: Partial<JobPlan> = {}) => {
    const plan = basePlan({ uid, name: `web-${uid}`, ...over });
    return { dir: `/var/lib/htcondor-sidecar/pods/${uid}`, label: `${plan.batchName} (uid ${uid})`, commands: jobCommands(plan) };
  };
  const jobs = [job("u1"), job("u2", { resources: { cpus: 2, memoryMiB: 512, gpus: 0 } }), job("u3")];

  test("golden: one queue N, shared values once, the others as $(Step)-indexed macros", () => expectGolden("batch-3.sub", renderBatch(jobs)));

  test("one queue statement, one initialdir and executable per job", () => {
    const text = renderBatch(jobs);
    expect(text.match(/^queue/gm)).toEqual(["queue"]);
    expect(text.trimEnd().endsWith("\nqueue 3")).toBe(true);
    expect(get(text, "initialdir")).toBe("$(InterLinkV0_$(Step))");
    expect(get(text, "executable")).toBe("$(InterLinkV0_$(Step))/job.sh");
    expect(get(text, "InterLinkV0_1")).toBe("/var/lib/htcondor-sidecar/pods/u2");
    // The same value for every job is written once; a different one per job, through a macro.
    expect(get(text, "universe")).toBe("vanilla");
    expect(get(text, "request_cpus")).toMatch(/^\$\(InterLinkV\d+_\$\(Step\)\)$/);
    expect(text.match(/^InterLinkV\d+_2 = /gm)!.length).toBeGreaterThanOrEqual(5);
  });

  test("every job's value, with its macro expanded, is the value it has alone", () => {
    const text = renderBatch(jobs);
    const defs = new Map(commands(text));
    jobs.forEach((j, step) => {
      for (const [key, value] of j.commands) {
        const written = defs.get(key)!;
        const expanded = written.replace(/^\$\((InterLinkV\d+)_\$\(Step\)\)$/, (_, m: string) => defs.get(`${m}_${step}`)!);
        expect([key, expanded]).toEqual([key, value]);
      }
    });
  });

  test("jobs of different shapes are refused: a command one job leaves unset would inherit the first job's", () => {
    const other = job("u4", { activeDeadlineSeconds: 60 });
    expect(submitShape(other)).not.toBe(submitShape(jobs[0]!));
    expect(() => renderBatch([jobs[0]!, other])).toThrow(/different commands/);
  });
});

describe("renderSubmit content", () => {
  const text = renderSubmit(richPlan, DIR);

  test("the job contract", () => {
    expect(get(text, "universe")).toBe("vanilla");
    // Absolute, with the pod folder as initialdir: a batch's file is not in any pod's folder (docs/pod-to-job.md#the-submit-file).
    expect(get(text, "initialdir")).toBe(DIR);
    expect(get(text, "executable")).toBe(`${DIR}/job.sh`);
    expect(get(text, "transfer_executable")).toBe("true");
    expect(get(text, "should_transfer_files")).toBe("YES");
    expect(get(text, "when_to_transfer_output")).toBe("ON_EXIT");
    expect(get(text, "want_io_proxy")).toBe("true");
    expect(get(text, "output")).toBe("job.out");
    expect(get(text, "error")).toBe("job.err");
    expect(get(text, "log")).toBe("job.log");
    expect(text.trimEnd().endsWith("\nqueue 1")).toBe(true);
    expect(text.match(/^queue/gm)).toHaveLength(1);
  });

  test("transfer lists", () => {
    expect(get(text, "transfer_input_files")).toBe("volumes, env");
    expect(get(text, "transfer_output_files")).toBe(
      "i.fetch.log, i.fetch.prev.log, c.web.log, c.web.prev.log, c.sidecar.log, c.sidecar.prev.log, podstate",
    );
    expect(logFiles(richPlan)).toHaveLength(6);
    const none = renderSubmit(basePlan(), DIR);
    expect(get(none, "transfer_input_files")).toBeUndefined();
  });

  // With a shared filesystem the wrapper writes the logs into the pod folder itself; a listed
  // file missing from the sandbox at transfer time would hold the job
  // (docs/htcondor.md#submit-file-rules).
  test("shared filesystem: no log in transfer_output_files, the state files still come back", () => {
    expect(get(renderSubmit({ ...richPlan, sharedFilesystem: true }, DIR), "transfer_output_files")).toBe("podstate");
  });

  test("resources always carry units", () => {
    expect(get(text, "request_cpus")).toBe("3");
    expect(get(text, "request_memory")).toBe("2048M");
    expect(get(text, "request_disk")).toBe("10485760K");
    expect(get(text, "request_gpus")).toBe("1");
    const small = renderSubmit(minimalPlan, DIR);
    expect(get(small, "request_memory")).toBe("128M");
    expect(get(small, "request_disk")).toBeUndefined();
    expect(get(small, "request_gpus")).toBeUndefined();
  });

  test("time limits: vacate time covers the grace period, allowed_job_duration backs the deadline", () => {
    expect(get(text, "job_max_vacate_time")).toBe("30");
    expect(get(text, "allowed_job_duration")).toBe(String(3600 + 20 + 60));
    expect(get(renderSubmit(minimalPlan, DIR), "allowed_job_duration")).toBeUndefined();
  });

  test("identity and policy", () => {
    expect(get(text, "batch_name")).toBe("default/web-1");
    expect(get(text, "accounting_group")).toBe("group_cms.prod");
    expect(get(text, "requirements")).toBe("HasSingularity == true");
    expect(get(text, "MY.InterLinkPodUID")).toBe('"7c9e6679-7425-40de-944b-e07fc1f90ae7"');
    expect(get(text, "MY.InterLinkPodName")).toBe('"web-1"');
    expect(get(text, "MY.InterLinkPodNamespace")).toBe('"default"');
    expect(get(text, "MY.InterLinkSidecarId")).toBe('"sidecar-a"');
  });

  test("initial per-container states: waiting ContainerCreating", () => {
    for (const attr of ["MY.InterLinkInit0State", "MY.InterLinkCtr0State", "MY.InterLinkCtr1State"]) {
      expect(get(text, attr)).toBe(`"${INITIAL_STATE_LINE}"`);
    }
    expect(parseStateLine(INITIAL_STATE_LINE)).toEqual({
      state: "waiting",
      reason: "ContainerCreating",
      ready: false,
      restartCount: 0,
      exitCode: undefined,
      startedAt: undefined,
      finishedAt: undefined,
      last: undefined,
      signal: undefined,
    });
  });

  test("extra lines come after ours, before queue", () => {
    const keys = commands(text).map(([k]) => k);
    expect(keys.slice(-2)).toEqual(["MY.ProjectName", "periodic_remove"]);
  });
});

describe("renderSubmit never lets a value inject", () => {
  test("no env value appears in the submit file", () => {
    const secret = "pa55-w0rd-ZZZ";
    const plan = withEnvFiles(basePlan({ containers: [container("main", { env: [["PASSWORD", secret], ["X", "y"]] })] }));
    const out = renderSubmit(plan, DIR);
    expect(out).not.toContain(secret);
    expect(out).not.toContain("PASSWORD");
    expect(out).not.toMatch(/^environment|^getenv/m);
  });

  test("$(...) stays literal through $(DOLLAR)", () => {
    expect(submitValue("$(ENV(HOME))")).toBe("$(DOLLAR)(ENV(HOME))");
    expect(submitValue("$$(Memory) $")).toBe("$(DOLLAR)$(DOLLAR)(Memory) $(DOLLAR)");
    const out = renderSubmit(basePlan({ submit: { lines: [["MY.Note", '"$(ENV(HOME))"']], requirements: 'Target.X =?= "$(Cluster)"' } }), DIR);
    expect(get(out, "MY.Note")).toBe('"$(DOLLAR)(ENV(HOME))"');
    expect(get(out, "requirements")).toBe('Target.X =?= "$(DOLLAR)(Cluster)"');
    expect(out.replaceAll("$(DOLLAR)", "")).not.toContain("$");
  });

  test.each(["a\nqueue 5", "a\rb", "a\0b", "x\n+Evil = true"])("a line break or NUL in a value throws: %p", (v) => {
    expect(() => submitValue(v)).toThrow(SidecarError);
    expect(() => renderSubmit(basePlan({ submit: { lines: [["periodic_remove", v]] } }), DIR)).toThrow(/line break or NUL/);
    expect(() => renderSubmit(basePlan({ submit: { lines: [], requirements: v } }), DIR)).toThrow(SidecarError);
    expect(() => renderSubmit(basePlan({ uid: v }), DIR)).toThrow(SidecarError);
  });

  // condor_submit trims the whitespace C's isspace() sees at the end of a line and joins the next
  // line onto one that then ends in `\` (docs/htcondor.md#submitting-many-pods-at-once): such a
  // value would change the line after it.
  test.each([
    ["a trailing backslash", "1 \\"],
    ["a backslash and spaces", "1 \\   "],
    ["a backslash and a tab", "1 \\\t"],
    ["a backslash and a vertical tab", "1 \\\v"],
    ["a backslash and a form feed", "1 \\\f"],
    ["two backslashes", "x \\\\"],
    ["only a backslash", "\\"],
    ["a backslash and a no-break space", "1 \\\u00a0"],
  ])("a value ending in %s throws", (_, v) => {
    expect(submitValueProblem(v)).toMatch(/continue it onto the next line/);
    expect(() => submitValue(v)).toThrow(SidecarError);
    expect(() => renderSubmit(basePlan({ submit: { lines: [], podOptions: [["rank", v]] } }), DIR)).toThrow(
      /annotations\["htcondor-job.vk.io\/submit-options"\].*next line/,
    );
    expect(() => renderSubmit(basePlan({ submit: { lines: [["rank", v]] } }), DIR)).toThrow(/config Submit.ExtraLines.*next line/);
    expect(() => renderSubmit(basePlan({ submit: { lines: [], requirements: v } }), DIR)).toThrow(/Submit.Requirements/);
  });
  test.each(["a \\ b", "C:\\dir\\x", '"\\\\"', "1\\\u00a0x"])("a backslash that does not end the line is kept: %p", (v) => {
    expect(submitValueProblem(v)).toBeUndefined();
    expect(get(renderSubmit(basePlan({ submit: { lines: [], podOptions: [["rank", v]] } }), DIR), "rank")).toBe(v);
  });

  test("the pod's submit options come last, after the site's lines", () => {
    const out = renderSubmit(basePlan({ submit: { lines: [["+Site", "1"]], podOptions: [["rank", "Memory"], ["+Pod", "2"]] } }), DIR);
    const lines = out.split("\n");
    expect(lines.slice(lines.indexOf("MY.Site = 1"))).toEqual(["MY.Site = 1", "rank = Memory", "MY.Pod = 2", "", "queue 1", ""]);
  });

  test("ClassAd strings escape backslash and double quote", () => {
    expect(submitString('a"b\\c')).toBe('"a\\"b\\\\c"');
    expect(submitString("$x")).toBe('"$(DOLLAR)x"');
    const out = renderSubmit(basePlan({ name: 'x" || true || "' }), DIR);
    expect(get(out, "MY.InterLinkPodName")).toBe('"x\\" || true || \\""');
  });

  // docs/htcondor.md#submit-file-rules (+Attr and MY.Attr are the same; a job attribute is a
  // ClassAd name).
  test.each([
    ["bad key", "a b"],
    ["bad key", "x=y"],
    ["bad key", "1abc"],
    ["bad key", ""],
    ["bad key", "+"],
    ["bad key", "MY."],
    ["bad key", "+a.b"],
    ["bad key", "My.a_b.c+d"],
    ["bad key", "+1x"],
    ["bad key", "request_memory+1"],
    ["reserved", "queue"],
    ["reserved", "Executable"],
    ["reserved", "environment"],
    ["reserved", "getenv"],
    ["reserved", "DOLLAR"],
    ["reserved", "transfer_output_files"],
    ["reserved", "MY.InterLinkPodUID"],
    ["reserved", "include"],
    // The same attributes through the + spelling, and the attributes the reserved commands set.
    ["reserved", "+InterLinkPodUID"],
    ["reserved", "+interlinksidecarid"],
    ["reserved", "+InterLinkCtr0State"],
    ["reserved", "+Environment"],
    ["reserved", "MY.Cmd"],
    ["reserved", "+TransferOutput"],
    ["reserved", "+Iwd"],
    ["reserved", "+WantIOProxy"],
    // The shared event log's format and a second log (docs/status.md#following-the-event-log): one
    // pod must not switch the log every job shares to XML, nor name another file for its events.
    ["reserved", "log_xml"],
    ["reserved", "+UserLogUseXML"],
    ["reserved", "dagman_log"],
    ["reserved", "MY.DAGManNodesLog"],
    ["reserved", "+UserLog"],
    // The macros that carry a batch's per-job values.
    ["reserved", "InterLinkV0_0"],
    ["reserved", "interlinkv3_$(Step)"],
  ])("extra line key refused (%s): %p", (_why, key) => {
    expect(() => renderSubmit(basePlan({ submit: { lines: [[key, "1"]] } }), DIR)).toThrow(SidecarError);
  });

  test.each([
    ["request_memory", "request_memory"],
    ["MY.ProjectName", "MY.ProjectName"],
    ["periodic_hold", "periodic_hold"],
    ["my.a_b", "MY.a_b"],
    ["+ProjectName", "MY.ProjectName"],
    ["+_x1", "MY._x1"],
  ])("extra line key accepted: %p → %p", (key, written) => {
    expect(renderSubmit(basePlan({ submit: { lines: [[key, "1"]] } }), DIR)).toContain(`\n${written} = 1\n`);
  });

  test("submitKey is the one rule: canonical key or the reason", () => {
    expect(submitKey("+SingularityImage")).toEqual({ key: "MY.SingularityImage" });
    expect(submitKey("priority")).toEqual({ key: "priority" });
    expect(submitKey("+InterLinkPodUID")).toEqual({ problem: "it is set by the sidecar", reserved: true });
    expect("problem" in submitKey("a-b")).toBe(true);
  });

  test("batch_name and accounting_group must be plain", () => {
    expect(() => renderSubmit(basePlan({ batchName: 'a"b' }), DIR)).toThrow(SidecarError);
    expect(() => renderSubmit(basePlan({ submit: { lines: [], accountingGroup: " g" } }), DIR)).toThrow(SidecarError);
  });

  test("transfer names with commas or spaces throw", () => {
    expect(() => renderSubmit(basePlan({ transferInput: ["a,b"] }), DIR)).toThrow(SidecarError);
    expect(() => renderSubmit(basePlan({ transferInput: ["a b"] }), DIR)).toThrow(SidecarError);
  });

  test("resources must be whole numbers", () => {
    const bad: Partial<JobPlan>[] = [
      { resources: { cpus: 1.5, memoryMiB: 1, gpus: 0 } },
      { resources: { cpus: 1, memoryMiB: -1, gpus: 0 } },
      { resources: { cpus: 1, memoryMiB: 1, gpus: NaN } },
    ];
    for (const over of bad) expect(() => renderSubmit(basePlan(over), DIR)).toThrow(SidecarError);
  });
});
