// The HTCJob planner (src/operator/htcjob-plan.ts; docs/pod-to-job.md#an-htcjobs-procs): the
// seed's examples, the refusals of bad input, the htcopts allowlist, the submit file of one
// cluster, and real bash running the rendered wrapper once per proc.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { htcjobConfig, parseConfig } from "../../src/config.ts";
import { SidecarError } from "../../src/core/errors.ts";
import { type ImageOverride, parseImageOverride } from "../../src/core/images.ts";
import { submitKey } from "../../src/core/submit-rules.ts";
import type { HTCJobConfig, JobPlan, PlanConfig } from "../../src/core/types.ts";
import { HTCJOB_SCRIPT_PATH, HTCJOB_WORKDIR, type HTCJobObject, planHTCJob } from "../../src/operator/htcjob-plan.ts";
import { procDir, renderBatch, renderSubmit } from "../../src/render/submit.ts";
import { renderWrapper } from "../../src/render/wrapper.ts";
import { testPlanConfig } from "../fixtures/config.ts";
import { expectGolden, perPodPart, submitCommands } from "../render/golden.ts";
import { cleanup, logText, materialize, readState, runWrapper, SHIM, shimCalls, tempDir } from "../render/harness.ts";

setDefaultTimeout(150_000);
afterAll(cleanup);

const GOLDEN = join(import.meta.dir, "golden");

/** The HTCJob's folder a cluster is submitted from (procs go below it, procDir). */
const DIR = "/var/lib/htcondor-sidecar/htcjobs/5f0c9a2e";
const UID = "5f0c9a2e-1b7d-4c11-9d3e-0a8e6c2b7f41";

// The original operator's examples (seed 002/004: examples/retcode/zero.yaml, examples/queue.yaml).
const ZERO_YAML = `apiVersion: htc.cern.ch/v1alpha1
kind: HTCJob
metadata:
  name: zero
spec:
  name: zero
  script:
    image: centos
    command: bash
    source: |
      echo "A"
`;
const QUEUE_YAML = `apiVersion: htc.cern.ch/v1alpha1
kind: HTCJob
metadata: {name: queue}
spec:
  name: queue
  queue: 3
  script: {image: centos, command: bash, source: "echo $1\\n"}
`;

const HTC: HTCJobConfig = htcjobConfig(parseConfig("").config);

function object(yaml: string, over: Partial<HTCJobObject> = {}): HTCJobObject {
  const o = parseYaml(yaml) as { metadata: { name: string }; spec: unknown };
  return { namespace: "default", name: o.metadata.name, uid: UID, generation: 1, spec: o.spec, ...over };
}

function job(spec: unknown, name = "j"): HTCJobObject {
  return { namespace: "default", name, uid: UID, generation: 1, spec };
}

const script = (over: Record<string, unknown> = {}) => ({ image: "centos", command: "bash", source: "echo $1\n", ...over });

function plan(o: HTCJobObject, cfg: Partial<PlanConfig> = {}, htc: Partial<HTCJobConfig> = {}): JobPlan {
  return planHTCJob(o, testPlanConfig(cfg), { ...HTC, ...htc });
}

/** The refusal planHTCJob throws: a one-line SidecarError("invalid"). */
function refusal(o: HTCJobObject, cfg: Partial<PlanConfig> = {}, htc: Partial<HTCJobConfig> = {}): string {
  let err: unknown;
  try {
    plan(o, cfg, htc);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(SidecarError);
  expect((err as SidecarError).kind).toBe("invalid");
  expect((err as Error).message).not.toContain("\n");
  return (err as Error).message;
}

const get = (text: string, key: string) => submitCommands(text).find(([k]) => k === key)?.[1];

describe("the seed's examples (docs/pod-to-job.md#an-htcjobs-procs)", () => {
  test("zero.yaml: one proc; spec.name is ignored", () => {
    const p = plan(object(ZERO_YAML));
    expect(p.htcjob).toEqual({
      operatorId: "htcjob-operator",
      procs: 1,
      generation: 1,
      keepWork: { volume: "htcjob-work", maxBytes: 100 * 1024 * 1024, maxFiles: 10_000 },
    });
    expect(renderSubmit(p, DIR).trimEnd().endsWith("\nqueue 1")).toBe(true);
    const c = p.containers[0]!;
    expect(c.image).toEqual({ kind: "container", uri: "docker://centos" });
    expect([...c.command!, ...c.args!]).toEqual(["bash", HTCJOB_SCRIPT_PATH]);
    expect(c.procIdArg).toBe(true);
    expect(c.workingDir).toBe(HTCJOB_WORKDIR);
    const file = p.files.find((f) => f.path === "volumes/htcjob-script/script")!;
    expect(new TextDecoder().decode(file.content)).toBe('echo "A"\n');
    // Another name in spec.name changes nothing.
    const renamed = object(ZERO_YAML.replace("  name: zero\n  script", "  name: other\n  script"));
    expect(renderSubmit(plan(renamed), DIR)).toBe(renderSubmit(p, DIR));
  });

  test("queue.yaml: one cluster of 3 procs (golden submit file and wrapper)", () => {
    const p = plan(object(QUEUE_YAML));
    expect(p.htcjob?.procs).toBe(3);
    expectGolden("queue.sub", renderSubmit(p, DIR), GOLDEN);
    expectGolden("queue.plan.sh", perPodPart(renderWrapper(p)), GOLDEN);
  });
});

describe("spec.queue (docs/pod-to-job.md#an-htcjobs-procs: absent or 0 means 1; script.queue when queue is absent)", () => {
  const cases: [string, Record<string, unknown>, number][] = [
    ["absent", { script: script() }, 1],
    ["0", { queue: 0, script: script() }, 1],
    ["5", { queue: 5, script: script() }, 5],
    ["script.queue when queue is absent", { script: script({ queue: 4 }) }, 4],
    ["queue wins over script.queue", { queue: 2, script: script({ queue: 4 }) }, 2],
    ["script.queue 0", { script: script({ queue: 0 }) }, 1],
    ["the configured maximum itself", { queue: 7, script: script() }, 7],
  ];
  for (const [name, spec, procs] of cases) test(name, () => expect(plan(job(spec), {}, { maxQueue: 7 }).htcjob?.procs).toBe(procs));
});

describe("bad input is refused with one line naming the field and the value (docs/pod-to-job.md#an-htcjobs-procs)", () => {
  const cases: [string, unknown, string][] = [
    ["a negative queue", { queue: -1, script: script() }, 'HTCJob "default/j": spec.queue: -1 must be 0 or more'],
    ["a negative script.queue", { script: script({ queue: -2 }) }, 'HTCJob "default/j": spec.script.queue: -2 must be 0 or more'],
    ["a queue above HTCJob.MaxQueue", { queue: 8, script: script() }, 'HTCJob "default/j": spec.queue: 8 is more than this site allows (HTCJob.MaxQueue: 7)'],
    ["a queue that is not whole", { queue: 1.5, script: script() }, 'HTCJob "default/j": spec.queue: must be a whole number, got 1.5'],
    ["a queue that is a string", { queue: "3", script: script() }, 'HTCJob "default/j": spec.queue: must be a whole number, got "3"'],
    ["no spec", undefined, 'HTCJob "default/j": spec: is required'],
    ["no script", { queue: 1 }, 'HTCJob "default/j": spec.script: is required'],
    ["no image", { script: { command: "bash", source: "" } }, 'HTCJob "default/j": spec.script.image: is required'],
    ["no command", { script: { image: "centos", source: "" } }, 'HTCJob "default/j": spec.script.command: is required'],
    ["no source", { script: { image: "centos", command: "bash" } }, 'HTCJob "default/j": spec.script.source: is required'],
    // The original's sample CR wrote command: ["bash"], which its own schema refuses.
    ["a command list", { script: script({ command: ["bash"] }) }, 'HTCJob "default/j": spec.script.command: must be a string, got a list'],
    ["an empty command", { script: script({ command: "  " }) }, 'HTCJob "default/j": spec.script.command: must name a program (e.g. bash)'],
    ["a command with a line break", { script: script({ command: "bash\nrm" }) }, 'HTCJob "default/j": spec.script.command: "bash\\nrm" must not contain'],
    [
      "an image that does not parse",
      { script: script({ image: "Not An Image" }) },
      'HTCJob "default/j": spec.script.image: "Not An Image" is not an image reference',
    ],
    [
      "an image that is a path",
      { script: script({ image: "/cvmfs/img.sif" }) },
      'HTCJob "default/j": spec.script.image: "/cvmfs/img.sif" is not an image reference',
    ],
    ["a source with NUL", { script: script({ source: "a\0b" }) }, 'HTCJob "default/j": spec.script.source: must not contain NUL characters'],
    ["htcopts that is not text", { script: script(), htcopts: 3 }, 'HTCJob "default/j": spec.htcopts: must be a string, got 3'],
    [
      "a malformed htcopts line",
      { script: script(), htcopts: "+JobFlavour" },
      'HTCJob "default/j": spec.htcopts: line 1: expected "command = value", got "+JobFlavour"',
    ],
  ];
  for (const [name, spec, prefix] of cases) {
    test(name, () => expect(refusal(job(spec), {}, { maxQueue: 7 })).toStartWith(prefix));
  }
});

describe("htcopts: each line through the one submit renderer and the HTCJob allowlist (docs/operator.md#htcopts)", () => {
  test("the default allowlist admits what the original's examples use", () => {
    expect(HTC.submitOptionsAllow).toEqual(["+JobFlavour", "+MaxRuntime"]);
    const p = plan(job({ script: script(), htcopts: '+JobFlavour = "espresso"\n\n# a comment\n+MaxRuntime = 10\n' }));
    const cmds = submitCommands(renderSubmit(p, DIR));
    expect(cmds.slice(-2)).toEqual([["MY.JobFlavour", '"espresso"'], ["MY.MaxRuntime", "10"]]);
  });

  test("values are the renderer's: a $ cannot expand a macro", () => {
    const p = plan(job({ script: script(), htcopts: '+JobFlavour = "$(ProcId)"' }));
    expect(get(renderSubmit(p, DIR), "MY.JobFlavour")).toBe('"$(DOLLAR)(ProcId)"');
  });

  // The original pasted htcopts before queue: transfer_input_files = <the operator's keytab>
  // shipped the credential to the job (docs/threat-model.md).
  const refused: [string, string][] = [
    ["transfer_input_files = /secret/keytab", "transfer_input_files"],
    ["executable = /bin/sh", "executable"],
    ["arguments = 1", "arguments"],
    ["environment = A=1", "environment"],
    ['+HTCJobUID = "other"', "+HTCJobUID"],
    ['MY.HTCJobOperatorId = "x"', "MY.HTCJobOperatorId"],
    ['+InterLinkPodUID = "x"', "+InterLinkPodUID"],
    ['+Owner = "root"', "+Owner"],
    ["request_memory = 64G", "request_memory"],
  ];
  for (const [line, key] of refused) {
    test(`refused: ${line}`, () => {
      expect(refusal(job({ script: script(), htcopts: `+JobFlavour = "x"\n${line}` }))).toBe(
        `HTCJob "default/j": spec.htcopts: submit command ${JSON.stringify(key)} is not allowed on this site (allowed: +JobFlavour, +MaxRuntime)`,
      );
    });
  }

  test("a site may admit more (HTCJob.SubmitOptions), separate from the pods' Channels.SubmitOptions", () => {
    const p = plan(job({ script: script(), htcopts: "request_memory = 4G" }), { submitOptionsAllow: [] }, { submitOptionsAllow: ["request_memory"] });
    expect(submitCommands(renderSubmit(p, DIR)).at(-1)).toEqual(["request_memory", "4G"]);
    // The pods' allowlist does not reach HTCJobs.
    expect(refusal(job({ script: script(), htcopts: "rank = 1" }), { submitOptionsAllow: ["rank"] })).toContain('submit command "rank" is not allowed');
  });

  test("the config refuses a reserved key in HTCJob.SubmitOptions", () => {
    expect(() => parseConfig("HTCJob:\n  SubmitOptions: [transfer_input_files]\n")).toThrow("HTCJob.SubmitOptions.0: it is set by the sidecar");
    expect(() => parseConfig("HTCJob:\n  SubmitOptions: [+HTCJobUID]\n")).toThrow("HTCJob.SubmitOptions.0: it is set by the sidecar");
  });

  test("HTCJob* attributes are reserved for pods too, like InterLink*", () => {
    for (const k of ["+HTCJobUID", "MY.HTCJobOperatorId", "+htcjobname"]) expect(submitKey(k)).toEqual({ problem: "it is set by the sidecar", reserved: true });
  });
});

describe("one HTCJob, one cluster of its own (docs/operator.md#never-twice)", () => {
  const text = () => renderSubmit(plan(object(QUEUE_YAML)), DIR);

  test("every proc carries the HTCJob's UID and the operator's id, never a pod's or a sidecar's labels", () => {
    const cmds = submitCommands(text());
    expect(get(text(), "MY.HTCJobUID")).toBe(JSON.stringify(UID));
    expect(get(text(), "MY.HTCJobOperatorId")).toBe('"htcjob-operator"');
    expect(get(text(), "MY.HTCJobGeneration")).toBe("1");
    expect(cmds.filter(([k]) => /^MY\.InterLink(Pod|Sidecar|Containers)/.test(k))).toEqual([]);
    expect(get(renderSubmit(plan(object(QUEUE_YAML), { sidecarId: "sidecar-a" }, { operatorId: "op-b" }), DIR), "MY.HTCJobOperatorId")).toBe('"op-b"');
  });

  test("each proc gets its ProcId as job.sh's argument and a folder of its own", () => {
    expect(get(text(), "arguments")).toBe("$(ProcId)");
    expect(get(text(), "initialdir")).toBe(`${DIR}/${procDir("$(ProcId)")}`);
    expect(get(text(), "executable")).toBe(`${DIR}/job.sh`);
    // Inputs are the HTCJob's, two folders up from the proc's.
    expect(get(text(), "transfer_input_files")).toBe("../../env, ../../volumes");
    expect(text().match(/^queue.*/gm)).toEqual(["queue 3"]);
  });

  test("an HTCJob never shares a condor_submit with another job", () => {
    const one = plan(object(QUEUE_YAML));
    const j = { dir: DIR, label: "x", commands: [] as const, procs: 3 };
    expect(() => renderBatch([j, { dir: "/other", label: "y", commands: [] }])).toThrow("an HTCJob's procs are a cluster of their own");
    expect(() => renderSubmit({ ...one, htcjob: { ...one.htcjob!, procs: 0 } }, DIR)).toThrow("Cannot queue 0 procs");
  });

  test("the namespace's accounting group and ImageOverrides apply, as to a pod", () => {
    const override = parseImageOverride("centos", "/cvmfs/unpacked.cern.ch/centos") as ImageOverride;
    const p = plan(object(QUEUE_YAML), { accountingGroups: { default: "group_default" }, imageOverrides: [override] });
    expect(get(renderSubmit(p, DIR), "accounting_group")).toBe("group_default");
    expect(p.containers[0]!.image).toEqual({ kind: "container", uri: "/cvmfs/unpacked.cern.ch/centos" });
  });

  test("the image is always a container image, even named host where pods may use host images", () => {
    const p = plan(job({ script: script({ image: "host" }) }), { allowHostImage: true });
    expect(p.containers[0]!.image).toEqual({ kind: "container", uri: "docker://host" });
  });

  test("the command is split at spaces into words, never read by a shell", () => {
    const p = plan(job({ script: script({ command: "python3  -u $(X)" }) }));
    expect(p.containers[0]!.command).toEqual(["python3", "-u", "$(X)"]);
  });
});

describe("the wrapper runs <command> <script> <ProcId> in each proc (real bash; docs/pod-to-job.md#an-htcjobs-procs)", () => {
  const source = 'echo "proc $1 runs $0 in $(pwd)"\necho "$1" > "$1.out"\n';

  test("two procs of one wrapper, each with its own ProcId", async () => {
    const p = plan(job({ queue: 2, script: script({ command: "bash", source }) }), { containerRuntime: SHIM });
    const runs = [];
    for (const procId of ["0", "1"]) {
      const shimLog = tempDir("htcjob-shim-");
      const sandbox = materialize(p);
      const r = await runWrapper(sandbox, { args: [procId], env: { MINICONDOR_SHIM_LOG: shimLog } });
      runs.push({ procId, r, sandbox, shimLog });
    }
    for (const { procId, r, sandbox, shimLog } of runs) {
      expect(r.code).toBe(0);
      expect(readState(sandbox, "htcjob")).toMatchObject({ state: "terminated", exitCode: 0 });
      expect(logText(sandbox, "htcjob")).toEqual([`proc ${procId} runs ${HTCJOB_SCRIPT_PATH} in ${HTCJOB_WORKDIR}`]);
      // The container's argv ends with the command, the script and the ProcId.
      const exec = shimCalls(shimLog).find((c) => c.argv.includes("exec") && c.argv.includes(HTCJOB_SCRIPT_PATH))!;
      expect(exec.argv.slice(-3)).toEqual(["bash", HTCJOB_SCRIPT_PATH, procId]);
    }
  });

  // docs/operator.md#output: the working directory comes back as work/, files and folders only,
  // whole or not at all, and podstate/work says which.
  const leaves = [
    "echo data > a.txt",
    "mkdir -p sub/deeper && echo b > sub/deeper/b",
    "ln -s /etc/passwd passwd-link",
    "ln -s /tmp dir-link",
    "mkfifo fifo",
    "chmod 000 sub/deeper",
  ].join("\n") + "\n";
  const list = (dir: string): string[] => {
    const out: string[] = [];
    const walk = (rel: string) => {
      for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
        const path = rel ? `${rel}/${e.name}` : e.name;
        out.push(`${e.isSymbolicLink() ? "link" : e.isDirectory() ? "dir" : e.isFile() ? "file" : "other"} ${path}`);
        if (e.isDirectory()) walk(path);
      }
    };
    walk("");
    return out.sort();
  };

  test("the working directory comes back as work/: files and folders, never a link or a FIFO", async () => {
    const p = plan(job({ script: script({ source: leaves }) }), { containerRuntime: SHIM });
    const sandbox = materialize(p);
    const r = await runWrapper(sandbox, { args: ["0"] });
    expect(r.code).toBe(0);
    expect(list(join(sandbox, "work"))).toEqual(["dir sub", "dir sub/deeper", "file a.txt", "file sub/deeper/b"]);
    expect(readFileSync(join(sandbox, "work/sub/deeper/b"), "utf8")).toBe("b\n");
    // 5 bytes + 2 bytes in 4 entries; 3 dropped (two links and the FIFO).
    expect(readFileSync(join(sandbox, "podstate/work"), "utf8")).toBe("kept 7 4 3\n");
    expect(existsSync(join(sandbox, "emptydir/htcjob-work"))).toBe(false);
    expect(get(renderSubmit(p, DIR), "transfer_output_files")).toBe("c.htcjob.log, c.htcjob.prev.log, podstate, work");
  });

  test("above HTCJob.MaxOutputBytes or MaxOutputFiles nothing of the working directory comes back, and podstate/work says so", async () => {
    for (const [limits, report] of [[{ maxOutputBytes: 6 }, "too-big 7 4 3\n"], [{ maxOutputFiles: 3 }, "too-big 7 4 3\n"]] as const) {
      const p = plan(job({ script: script({ source: leaves }) }), { containerRuntime: SHIM }, limits);
      const sandbox = materialize(p);
      expect((await runWrapper(sandbox, { args: ["0"] })).code).toBe(0);
      expect(list(join(sandbox, "work"))).toEqual([]);
      expect(readFileSync(join(sandbox, "podstate/work"), "utf8")).toBe(report);
    }
  });

  test("HTCJob.MaxOutputBytes 0: the working directory is not asked for", () => {
    const p = plan(object(QUEUE_YAML), {}, { maxOutputBytes: 0 });
    expect(p.htcjob!.keepWork).toBeUndefined();
    expect(get(renderSubmit(p, DIR), "transfer_output_files")).toBe("c.htcjob.log, c.htcjob.prev.log, podstate");
    expect(renderWrapper(p)).not.toContain("KEEP_WORK_DIR=");
  });

  test("a wrapper started without a ProcId stops before running anything", async () => {
    const p = plan(object(QUEUE_YAML), { containerRuntime: SHIM });
    for (const args of [[], ["x"], ["1; rm -rf /"]]) {
      const sandbox = materialize(p);
      const r = await runWrapper(sandbox, { args });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("expected the proc's ProcId as its argument");
      expect(readState(sandbox, "htcjob")).toBeUndefined();
    }
  });
});
