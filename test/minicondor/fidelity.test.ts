// Fidelity tests for the minicondor emulator against docs/htcondor.md: each tool's section there (read from
// the HTCondor source) and what a real pool printed (docs/htcondor.md#observed-on-a-real-htcondor).
// Run: node_modules/.bin/bun test test/minicondor
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { cleanup, createHome, homePids, type RunResult, runTool, setConfig, setFaults, toolPath, waitFor } from "./src/testkit.ts";
import { Ad, adToJson, afValue, evalExpr, parse } from "./src/classad.ts";
import { leastCluster } from "./src/query.ts";
import { pidAlive, pidsWithEnv, pidsWithEnvEntry } from "./src/common.ts";
import { scaled, scaleDefaultTimeout } from "../helpers/sidecar.ts";

// Tests without a timeout of their own run tools, each a process: a guard against a hang that
// grows with the load measured, never bun's 5 s, which a busy machine reached.
await scaleDefaultTimeout(60_000);

const ENV = { MINICONDOR_ALLOW_ROOT: "1" };
let home = "";
let work = "";
const homes: string[] = [];

function newHome(opts: Parameters<typeof createHome>[0] = {}): string {
  const h = createHome({ scheddIdleExitMs: 1500, pollMs: 50, ...opts });
  homes.push(h);
  return h;
}
const run = (
  tool: string,
  args: string[] = [],
  o: { cwd?: string; stdin?: string; timeoutMs?: number; env?: Record<string, string>; home?: string } = {},
): Promise<RunResult> => runTool(o.home ?? home, tool, args, { cwd: o.cwd ?? work, stdin: o.stdin, timeoutMs: o.timeoutMs, env: { ...ENV, ...(o.env ?? {}) } });

function writeFile(name: string, text: string, mode = 0o644, dir = work): string {
  const p = path.join(dir, name);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, text);
  fs.chmodSync(p, mode);
  return p;
}
async function submit(sub: string, args: string[] = [], o: { home?: string; cwd?: string } = {}): Promise<number> {
  const f = writeFile(`sub-${Math.random().toString(36).slice(2)}.sub`, sub, 0o644, o.cwd ?? work);
  const r = await run("condor_submit", ["-terse", ...args, f], o);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  const m = /^(\d+)\.0 - \1\.\d+\n$/.exec(r.stdout);
  expect(m).not.toBeNull();
  return Number(m![1]);
}
async function histAf(id: string, attrs: string[], o: { home?: string } = {}): Promise<string> {
  const r = await run("condor_history", [id, "-af", ...attrs], o);
  return r.stdout;
}
async function waitDone(id: string, o: { home?: string; timeoutMs?: number } = {}): Promise<string> {
  return waitFor(async () => (await histAf(id, ["JobStatus"], o)).trim(), o.timeoutMs ?? 15_000, 100);
}
async function qAf(id: string, attrs: string[], o: { home?: string } = {}): Promise<string> {
  return (await run("condor_q", [id, "-af", ...attrs], o)).stdout.trim();
}
async function waitQ(id: string, attrs: string[], want: string, o: { home?: string; timeoutMs?: number } = {}): Promise<void> {
  await waitFor(async () => (await qAf(id, attrs, o)) === want, o.timeoutMs ?? 10_000, 100);
}

const escapeRe = (t: string) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

const SLEEPER = `#!/bin/bash
echo "sleeper start"
echo "stderr line" >&2
for i in $(seq 1 600); do echo "tick $i"; sleep 0.2; done
`;

beforeAll(() => {
  home = newHome();
  work = fs.mkdtempSync(path.join(home, "..", "mcwork-"));
  homes.push(work);
  writeFile("sleeper.sh", SLEEPER, 0o755);
});

afterAll(() => {
  for (const h of homes) cleanup(h, true);
});

// ---------------------------------------------------------------------------------------------
describe("docs/htcondor.md#conventions-of-every-tool conventions", () => {
  test("condor_version prints two lines (docs/htcondor.md#conventions-of-every-tool, test/minicondor/fixtures/more.txt version)", async () => {
    const r = await run("condor_version");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("$CondorVersion: 25.14.0 2026-11-22 PRE-RELEASE-UWCS $\n$CondorPlatform: X86_64-Debian_12 $\n");
    const q = await run("condor_q", ["-version"]);
    expect(q.stdout.split("\n")[0]).toStartWith("$CondorVersion: 25.14.0");
  });
  test("unique-prefix option matching; --full-name only (docs/htcondor.md#conventions-of-every-tool)", async () => {
    const a = await run("condor_q", ["-const", "ClusterId == 424242", "-js"]);
    expect(a.code).toBe(0);
    expect(a.stdout).toBe("");
    const b = await run("condor_q", ["--constraint", "ClusterId == 424242", "--json"]);
    expect(b.code).toBe(0);
    const c = await run("condor_q", ["--const", "x"]);
    expect(c.code).toBe(1);
    expect(c.stderr).toContain("Error: unrecognized argument --const");
  });
  test("every call is logged to calls.log (test/minicondor/README.md: tool, argv, duration, exit code)", async () => {
    await run("condor_version", ["-x"]);
    const log = fs.readFileSync(path.join(home, "calls.log"), "utf8").trim().split("\n");
    expect(log[log.length - 1]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z condor_version \["-x"\] \d+ 1$/);
  });
  test("condor_version refuses what it does not know, exit 1 (docs/htcondor.md#conventions-of-every-tool, src/condor_tools/version.cpp)", async () => {
    let r = await run("condor_version", ["-x"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toStartWith("ERROR: unrecognized argument: '-x'\nUsage: condor_version [options]\n");
    r = await run("condor_version", ["now"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toStartWith("ERROR: invalid argument: 'now'\nUsage: condor_version [options]\n");
    // the tool reads the second letter only: -version is not one of its options
    expect((await run("condor_version", ["-version"])).code).toBe(1);
    expect(await run("condor_version", ["-arch"])).toEqual({ code: 0, stdout: "X86_64\n", stderr: "" });
  });
});

describe("condor_q reads only the rows a constraint's ClusterId bound allows (speed only: the answer is the same)", () => {
  test.each([
    ["ClusterId >= 7 && JobStatus == 1", 7],
    ['(ClusterId > 7) && (Owner == "a" || ClusterId == 2)', 8],
    ["JobStatus == 1 && MY.ClusterId == 4", 4],
    ["ClusterId >= 7 || JobStatus == 1", 0],
    ["!(ClusterId < 7)", 0],
    ["ClusterId >= 7.5", 0],
    ["TARGET.ClusterId >= 7", 0],
    ["false", Infinity],
    ["JobStatus == 1 && false", Infinity],
  ])("%p: from cluster %p", (c, want) => {
    expect(leastCluster([parse(c)])).toBe(want);
  });
  test("with two constraints the larger bound holds", () => {
    expect(leastCluster([parse("ClusterId >= 3"), parse("ClusterId >= 9 && true")])).toBe(9);
  });
  test("-json with a bound answers what a full read answers; -totals still counts every job", async () => {
    const h = newHome();
    const sub = path.join(h, "s.sub");
    fs.writeFileSync(sub, "executable = /bin/true\nhold = true\nqueue 1\n");
    for (let i = 0; i < 4; i++) expect((await run("condor_submit", ["-terse", sub], { home: h })).code).toBe(0);
    const bounded = await run("condor_q", ["-af", "ClusterId", "-constraint", "ClusterId >= 3 && JobStatus == 5"], { home: h });
    expect(bounded).toEqual({ code: 0, stdout: "3\n4\n", stderr: "" });
    const totals = await run("condor_q", ["-totals", "-constraint", "ClusterId >= 3"], { home: h });
    expect(totals.stdout).toContain("Total for query: 2 jobs;");
    expect(totals.stdout).toMatch(/Total for \w+: 4 jobs;/);
  }, 30_000);
});

describe("ClassAd evaluator (docs/htcondor.md#conventions-of-every-tool constraint syntax)", () => {
  const ad = Ad.fromObject({ JobStatus: "2", Owner: '"Alice"', Name: '"x\\"y"', R: "1.5", L: "{ 1,2,3 }", E: "JobStatus + 1", B: "true" });
  const ev = (s: string) => afValue(evalExpr(s, ad));
  test("strings: == ignores case, =?= does not", () => {
    expect(ev('Owner == "alice"')).toBe("true");
    expect(ev('Owner =?= "alice"')).toBe("false");
    expect(ev('Owner =!= "alice"')).toBe("true");
    expect(ev('Name == "x\\"y"')).toBe("true");
  });
  test("undefined semantics", () => {
    expect(ev("Missing == 1")).toBe("undefined");
    expect(ev("Missing =?= undefined")).toBe("true");
    expect(ev("isUndefined(Missing)")).toBe("true");
    expect(ev("Missing == 1 || true")).toBe("true");
    expect(ev("Missing == 1 && false")).toBe("false");
    expect(ev("MY.JobStatus == 2 && TARGET.X =?= undefined")).toBe("true");
    expect(ev("jobstatus >= 2 && !(JobStatus > 2)")).toBe("true");
  });
  test("functions and arithmetic", () => {
    expect(ev("member(2, L)")).toBe("true");
    expect(ev('regexp("^al", Owner, "i")')).toBe("true");
    expect(ev("E * 2")).toBe("6");
    expect(ev("R * 2")).toBe("3.0");
    expect(ev("(CompletionDate ?: 7)")).toBe("7");
    expect(ev('JobStatus == 2 ? "r" : "x"')).toBe("r");
    expect(ev('versionGE(split("$CondorVersion: 25.14.0 x $")[1], "25.12.0")')).toBe("true");
  });
  test("JSON writer: sorted case-insensitively, expressions as \\/Expr(...)\\/ (docs/htcondor.md#json-output)", () => {
    expect(adToJson(Ad.fromObject({ b: "1", A: "2.0", E: "a+b", s: '"q\\"t"', u: "undefined" }))).toBe(
      '{\n  "A": 2.0,\n  "b": 1,\n  "E": "\\/Expr(a + b)\\/",\n  "s": "q\\"t",\n  "u": null\n}',
    );
  });
});

// ---------------------------------------------------------------------------------------------
describe("condor_submit (docs/htcondor.md#condor_submit)", () => {
  test("-terse prints N.0 - N.M (docs/htcondor.md#what-condor_submit-prints, docs/htcondor.md#key-observations)", async () => {
    const sub = "executable = /bin/true\nqueue 3\n";
    writeFile("three.sub", sub);
    const r = await run("condor_submit", ["-terse", "three.sub"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^(\d+)\.0 - \1\.2\n$/);
    expect(r.stderr).toBe("");
  });
  test("normal output: dots per proc and the summary line (docs/htcondor.md#what-condor_submit-prints)", async () => {
    writeFile("two.sub", "executable = /bin/true\nqueue 2\n");
    const r = await run("condor_submit", ["two.sub"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Submitting job\(s\)\.\.\n2 job\(s\) submitted to cluster \d+\.\n$/);
  });
  test("stdin with -terse - (test/minicondor/fixtures/more.txt submit-stdin)", async () => {
    const r = await run("condor_submit", ["-terse", "-"], {
      stdin: "executable=/bin/echo\narguments=from stdin\noutput=stdin.$(Cluster).out\nlog=stdin.log\nqueue 3\n",
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^(\d+)\.0 - \1\.2\n$/);
    const c = r.stdout.split(".")[0]!;
    await waitDone(`${c}.2`);
    expect(fs.readFileSync(path.join(work, `stdin.${c}.out`), "utf8")).toBe("from stdin\n");
  });
  test("-append overrides the file; -batch-name sets JobBatchName (docs/htcondor.md#condor_submit-options, test/minicondor/fixtures/more.txt)", async () => {
    writeFile(
      "hello.sub",
      "executable = /bin/echo\narguments = hello\noutput = hello.$(Cluster).$(Process).out\nlog = hello.log\nbatch_name = fromfile\nqueue\n",
    );
    const r = await run("condor_submit", ["-terse", "hello.sub", "-append", "arguments=appended", "-batch-name", "run42"]);
    expect(r.code).toBe(0);
    const c = r.stdout.split(".")[0]!;
    await waitDone(`${c}.0`);
    expect(fs.readFileSync(path.join(work, `hello.${c}.0.out`), "utf8")).toBe("appended\n");
    expect(await histAf(`${c}.0`, ["JobBatchName"])).toBe("run42\n");
  });
  test("errors: missing file, parse error, missing executable (docs/htcondor.md#condor_submit-exit-codes-and-errors, docs/htcondor.md#key-observations)", async () => {
    let r = await run("condor_submit", ["-terse", "nonexist.sub"]);
    expect(r).toEqual({ code: 1, stdout: "", stderr: "\nERROR: Failed to open command file (nonexist.sub) (No such file or directory)\n" });
    writeFile("bad.sub", "executable = /bin/true\nthis line is bad\nqueue\n");
    r = await run("condor_submit", ["-terse", "bad.sub"]);
    expect(r).toEqual({ code: 1, stdout: "", stderr: "\nERROR: on Line 2 of bad.sub: \n\nERROR: Failed to parse command file (line 2).\n" });
    writeFile("noexe.sub", "executable = /nonexistent/prog\nqueue\n");
    r = await run("condor_submit", ["-terse", "noexe.sub"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("\nERROR: Can't access executable file /nonexistent/prog: No such file or directory\n");
  });
  test("unused line warning keeps exit 0; bare +Attr=val argument is rejected (docs/htcondor.md#condor_submit-exit-codes-and-errors, docs/htcondor.md#condor_submit-options)", async () => {
    writeFile("typo.sub", "executable = /bin/true\nfoo = bar\nqueue\n");
    let r = await run("condor_submit", ["-terse", "typo.sub"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("WARNING: the line 'foo = bar' was unused by condor_submit. Is it a typo?\n");
    r = await run("condor_submit", ["-terse", "typo.sub", "+Foo=1"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("invalid attribute name '+Foo' for attrib=value assigment");
  });
  test("the command line: an argument that starts with '-' is an option, one with '=' a macro, any other the file (docs/htcondor.md#condor_submit-options)", async () => {
    writeFile("-rf.sub", "executable = /bin/true\nqueue\n");
    // An unknown option prints the usage on stderr and exits 1; `--` ends nothing, it is unknown too.
    for (const args of [["-rf.sub"], ["--", "-rf.sub"], ["--version.sub"]]) {
      const r = await run("condor_submit", ["-terse", ...args]);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).toStartWith("Usage: condor_submit [options] [<attrib>=<value>] [- | <submit-file>]\n");
    }
    let r = await run("condor_submit", ["-terse", "./-rf.sub"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\d+\.0 - \d+\.0\n$/);
    // A path with '=' is a macro, never the file: with no file, the description comes from stdin.
    writeFile("a=b.sub", "executable = /bin/true\nMY.FromFile = true\nqueue\n");
    r = await run("condor_submit", ["-terse", "./a=b.sub"], { stdin: "executable = /bin/true\nMY.FromStdin = true\nqueue\n" });
    expect(r.code).toBe(0);
    const c = r.stdout.split(".")[0]!;
    expect(await qAf(`${c}.0`, ["FromStdin", "FromFile"])).toBe("true undefined");
    // An absolute path too; a macro name is letters, digits, '_', '.' and '/' only.
    const dashed = writeFile("with-dash/a=b.sub", "executable = /bin/true\nqueue\n");
    r = await run("condor_submit", ["-terse", dashed]);
    expect(r).toEqual({ code: 1, stdout: "", stderr: `condor_submit: invalid attribute name '${dashed.split("=")[0]}' for attrib=value assigment\n` });
  });
  test("root is refused unless MINICONDOR_ALLOW_ROOT=1 (schedd qmgmt.cpp, refusal seen at commit per docs/htcondor.md#condor_submit-exit-codes-and-errors)", async () => {
    writeFile("two-root.sub", "executable = /bin/true\nqueue 2\n");
    const asRoot = { MINICONDOR_OWNER: "root", MINICONDOR_ALLOW_ROOT: "0" };
    let r = await runTool(home, "condor_submit", ["-batch-name", "refused-root", path.join(work, "two-root.sub")], { cwd: work, env: asRoot });
    // the attributes go out without acks: a dot per proc, then the commit fails
    expect(r).toEqual({
      code: 1,
      stdout: "Submitting job(s)..",
      stderr: '\nERROR: Failed to commit job submission into the queue.\nERROR: Setting job owner to "root" is not permitted\n',
    });
    r = await runTool(home, "condor_submit", ["-terse", "-batch-name", "refused-root", path.join(work, "two-root.sub")], { cwd: work, env: asRoot });
    expect(r).toEqual({
      code: 1,
      stdout: "",
      stderr: '\nERROR: Failed to commit job submission into the queue.\nERROR: Setting job owner to "root" is not permitted\n',
    });
    // nothing was queued
    expect((await run("condor_q", ["-allusers", "-constraint", 'JobBatchName == "refused-root"', "-af", "ClusterId"])).stdout).toBe("");
  });
  test("job ad attributes: units, +Attr expressions, requirements, defaults (docs/htcondor.md#submit-file-rules, docs/htcondor.md#job-status-and-job-attributes)", async () => {
    const c = await submit(`executable = /bin/true
request_memory = 1.5G
request_disk = 2G
request_cpus = 2
+Project = "abc"
MY.Num = 3
+Expr = JobStatus == 1 && Num > 2
requirements = Num > 1
accounting_group = grp
want_io_proxy = true
hold = true
queue
`);
    const r = await run("condor_q", [`${c}.0`, "-json"]);
    const j = JSON.parse(r.stdout)[0];
    expect(j.RequestMemory).toBe(1536);
    expect(j.RequestDisk).toBe(2097152);
    expect(j.RequestCpus).toBe(2);
    expect(j.Project).toBe("abc");
    expect(j.Num).toBe(3);
    expect(j.Expr).toBe("/Expr(JobStatus == 1 && Num > 2)/");
    expect(j.Requirements).toStartWith('/Expr((Num > 1) && (TARGET.Arch == "X86_64")');
    expect(j.AcctGroup).toBe("grp");
    expect(j.WantIOProxy).toBe(true);
    expect(j.JobMaxVacateTime).toBeUndefined(); // only when job_max_vacate_time is given
    expect(j.FileSystemDomain).toBeDefined(); // IF_NEEDED refers to MY.FileSystemDomain
    expect(j.JobStatus).toBe(5);
    expect(j.HoldReasonCode).toBe(15);
    expect(j.MyType).toBe("Job");
    expect(j.JobUniverse).toBe(5);
    expect(j.ExitBySignal).toBe(false);
    expect(j.NumJobStarts).toBe(0);
    expect(j.GlobalJobId).toMatch(new RegExp(`#${c}\\.0#\\d+$`));
    expect(j.Iwd).toBe(work);
    expect(typeof j.ServerTime).toBe("number");
    expect(j.JobStartDate).toBeUndefined();
    expect((await run("condor_rm", [String(c)])).code).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------
describe("jobs really run", () => {
  test("output file, exit code in history, user log events (docs/htcondor.md#job-status-and-job-attributes, test/minicondor/fixtures/hello.txt)", async () => {
    writeFile("exit3.sh", "#!/bin/bash\necho out-$1\necho err-$2 >&2\nexit 3\n", 0o755);
    const c = await submit("executable = exit3.sh\narguments = a b\noutput = e3.out\nerror = e3.err\nlog = e3.log\nshould_transfer_files = YES\nqueue\n");
    expect(await waitDone(`${c}.0`)).toBe("4");
    expect(fs.readFileSync(path.join(work, "e3.out"), "utf8")).toBe("out-a\n");
    expect(fs.readFileSync(path.join(work, "e3.err"), "utf8")).toBe("err-b\n");
    const h = JSON.parse((await run("condor_history", ["-json", `${c}.0`])).stdout)[0];
    expect(h.ExitCode).toBe(3);
    expect(h.ExitBySignal).toBe(false);
    expect(h.JobStatus).toBe(4);
    expect(h.LastJobStatus).toBe(2);
    expect(h.NumJobStarts).toBe(1);
    expect(h.CompletionDate).toBeGreaterThanOrEqual(h.QDate);
    expect(h.JobStartDate).toBeGreaterThanOrEqual(h.QDate);
    expect(h.LastRemoteHost).toMatch(/^slot1_\d+@/);
    expect(h.RemoteHost).toBeUndefined();
    const log = fs.readFileSync(path.join(work, "e3.log"), "utf8");
    expect(log).toMatch(
      new RegExp(`^000 \\(${String(c).padStart(3, "0")}\\.000\\.000\\) \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d Job submitted from host: <`),
    );
    expect(log).toContain("001 (");
    expect(log).toContain("Job terminated.\n\t(1) Normal termination (return value 3)\n");
  });
  test("the job environment has no PATH, only HTCondor's variables (docs/htcondor.md#the-complete-job-environment)", async () => {
    const c = await submit('executable = /usr/bin/env\noutput = env.out\nenvironment = "FOO=bar"\nshould_transfer_files = YES\nqueue\n');
    await waitDone(`${c}.0`);
    const env = Object.fromEntries(
      fs.readFileSync(path.join(work, "env.out"), "utf8").trim().split("\n").map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
    );
    expect(env.PATH).toBeUndefined();
    expect(env.FOO).toBe("bar");
    expect(env.BATCH_SYSTEM).toBe("HTCondor");
    expect(env._CHIRP_DELAYED_UPDATE_PREFIX).toBe("Chirp*");
    expect(env._CONDOR_SLOT).toMatch(/^slot1_\d+$/);
    expect(env._CONDOR_SCRATCH_DIR).toStartWith(path.join(home, "execute", "dir_"));
    expect(env.TMPDIR).toBe(env._CONDOR_SCRATCH_DIR);
    expect(env._CONDOR_JOB_AD).toBe(path.join(env._CONDOR_SCRATCH_DIR!, ".job.ad"));
    expect(env._CONDOR_JOB_IWD).toBe(work);
    expect(env.OMP_NUM_THREADS).toBe("1");
    expect(env.CUDA_VISIBLE_DEVICES).toBe("10000");
    expect(env.NVIDIA_VISIBLE_DEVICES).toBe("none");
    expect(fs.existsSync(path.join(env._CONDOR_BIN!, "..", "libexec", "condor_chirp"))).toBe(true);
    expect(Object.keys(env).filter((k) => !k.startsWith("_CONDOR_ANCESTOR_")).sort()).toEqual([
      "APPTAINER_CACHEDIR",
      "BATCH_SYSTEM",
      "CONDOR_STARTER_PID",
      "CUBACORES",
      "CUDA_VISIBLE_DEVICES",
      "FOO",
      "GOMAXPROCS",
      "GPU_DEVICE_ORDINAL",
      "HOME",
      "JULIA_NUM_THREADS",
      "MKL_NUM_THREADS",
      "NUMEXPR_NUM_THREADS",
      "NVIDIA_VISIBLE_DEVICES",
      "OMP_NUM_THREADS",
      "OMP_THREAD_LIMIT",
      "OPENBLAS_NUM_THREADS",
      "PYTHON_CPU_COUNT",
      "ROOT_MAX_THREADS",
      "SINGULARITY_CACHEDIR",
      "TEMP",
      "TF_LOOP_PARALLEL_ITERATIONS",
      "TF_NUM_THREADS",
      "TMP",
      "TMPDIR",
      "_CHIRP_DELAYED_UPDATE_PREFIX",
      "_CONDOR_AssignedGPUs",
      "_CONDOR_BIN",
      "_CONDOR_CHIRP_CONFIG",
      "_CONDOR_JOB_AD",
      "_CONDOR_JOB_IWD",
      "_CONDOR_JOB_PIDS",
      "_CONDOR_MACHINE_AD",
      "_CONDOR_SCRATCH_DIR",
      "_CONDOR_SLOT",
    ].sort());
  });
  test("the default should_transfer_files = IF_NEEDED transfers: the job runs in its scratch dir (docs/htcondor.md#submit-file-rules)", async () => {
    // the EP's FileSystemDomain differs from the AP's, as on any pool whose EPs are other machines
    writeFile("where.sh", "#!/bin/bash\npwd\necho made > made-by-where.txt\n", 0o755);
    const c = await submit("executable = where.sh\noutput = where.out\nqueue\n");
    expect(await waitDone(`${c}.0`)).toBe("4");
    const cwd = fs.readFileSync(path.join(work, "where.out"), "utf8").trim();
    expect(cwd).toStartWith(path.join(home, "execute", "dir_"));
    expect(fs.readFileSync(path.join(work, "made-by-where.txt"), "utf8")).toBe("made\n"); // a new top-level file came back
    const h = JSON.parse((await run("condor_history", ["-json", `${c}.0`, "-attributes", "ShouldTransferFiles,FileSystemDomain"])).stdout)[0];
    expect(h.ShouldTransferFiles).toBe("IF_NEEDED");
    expect(typeof h.FileSystemDomain).toBe("string");
  });
  test("arguments and environment: new-syntax quoting (docs/htcondor.md#submit-file-rules)", async () => {
    writeFile("args.sh", '#!/bin/bash\nfor a in "$@"; do echo "[$a]"; done\necho "one=[$one] two=[$two] three=[$three]"\n', 0o755);
    const c = await submit(`executable = args.sh
arguments = "one ""two"" 'spacey ''quoted'' argument'"
environment = "one=1 two=""2"" three='spacey ''quoted'' value'"
output = args.out
should_transfer_files = YES
queue
`);
    await waitDone(`${c}.0`);
    expect(fs.readFileSync(path.join(work, "args.out"), "utf8")).toBe(
      `[one]\n["two"]\n[spacey 'quoted' argument]\none=[1] two=["2"] three=[spacey 'quoted' value]\n`,
    );
    const h = JSON.parse((await run("condor_history", ["-json", `${c}.0`, "-attributes", "Arguments,Environment"])).stdout)[0];
    expect(h.Arguments).toBe(`one "two" 'spacey ''quoted'' argument'`);
    const c2 = await submit(
      "executable = args.sh\narguments = old syntax\nenvironment = one=1;two=2\noutput = args2.out\nshould_transfer_files = YES\nqueue\n",
    );
    await waitDone(`${c2}.0`);
    expect(fs.readFileSync(path.join(work, "args2.out"), "utf8")).toBe("[old]\n[syntax]\none=[1] two=[2] three=[]\n");
    expect(await histAf(`${c2}.0`, ["Args"])).toBe("old syntax\n");
  }, 30_000);
  test("file transfer: inputs by basename, dir/ contents, output files and directories (docs/htcondor.md#submit-file-rules, docs/htcondor.md#output-transfer-of-folders-and-missing-files)", async () => {
    writeFile("in/a.txt", "A\n");
    writeFile("in/d/b.txt", "B\n");
    writeFile("in/e/c.txt", "C\n");
    writeFile("xfer.sh", "#!/bin/bash\ncat a.txt d/b.txt c.txt > cat.txt\nmkdir -p state/sub\necho s > state/sub/s.txt\necho junk > junk.txt\n", 0o755);
    const c = await submit(
      "executable = xfer.sh\ntransfer_input_files = in/a.txt, in/d, in/e/\ntransfer_output_files = cat.txt, state, missing.txt\nshould_transfer_files = YES\nqueue\n",
    );
    expect(await waitDone(`${c}.0`)).toBe("4");
    expect(fs.readFileSync(path.join(work, "cat.txt"), "utf8")).toBe("A\nB\nC\n");
    expect(fs.readFileSync(path.join(work, "state/sub/s.txt"), "utf8")).toBe("s\n");
    expect(fs.existsSync(path.join(work, "junk.txt"))).toBe(false);
    // no transfer_output_files: new top-level files come back
    const d = await submit("executable = xfer.sh\ntransfer_input_files = in/a.txt, in/d, in/e/\nshould_transfer_files = YES\nqueue\n");
    await waitDone(`${d}.0`);
    expect(fs.existsSync(path.join(work, "junk.txt"))).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
describe("condor_q / condor_history output (docs/htcondor.md#condor_q, docs/htcondor.md#condor_history)", () => {
  test("condor_q -json with no match prints nothing; history prints [\\n]\\n (docs/htcondor.md#pitfalls)", async () => {
    const q = await run("condor_q", ["-json", "-constraint", "ClusterId == 999999"]);
    expect(q).toEqual({ code: 0, stdout: "", stderr: "" });
    const h = await run("condor_history", ["-json", "999999.0"]);
    expect(h).toEqual({ code: 0, stdout: "[\n]\n", stderr: "" });
    const af = await run("condor_q", ["999999", "-af", "JobStatus"]);
    expect(af).toEqual({ code: 0, stdout: "", stderr: "" });
  });
  test("-json shape: [\\n{...}\\n,\\n{...}\\n]\\n, -attributes limits keys (docs/htcondor.md#json-output, test/minicondor/fixtures/multi.txt)", async () => {
    const c = await submit("executable = /bin/true\nhold = true\nqueue 2\n");
    const r = await run("condor_q", ["-json", "-attributes", "ClusterId,ProcId,JobStatus,NoSuchAttr", String(c)]);
    expect(r.stdout).toBe(
      `[\n{\n  "ClusterId": ${c},\n  "JobStatus": 5,\n  "ProcId": 0\n}\n,\n{\n  "ClusterId": ${c},\n  "JobStatus": 5,\n  "ProcId": 1\n}\n]\n`,
    );
    const full = await run("condor_q", ["-json", `${c}.1`]);
    const keys = [...full.stdout.matchAll(/^ {2}"([^"]+)":/gm)].map((m) => m[1]!);
    expect(keys).toEqual([...keys].sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase())));
    expect(keys).toContain("ServerTime");
    expect(full.stdout).toContain('"RequestDisk": "\\/Expr(MAX({ 1024,(TransferInputSizeMB + 1) * 1.250000000000000E+00 }) * 1024)\\/"');
    // -af (docs/htcondor.md#autoformat-output)
    expect((await run("condor_q", [String(c), "-af", "ClusterId", "ProcId", "JobStatus", "HoldReasonCode", "Nope", "Owner"])).stdout)
      .toMatch(new RegExp(`^${c} 0 5 15 undefined \\S+\n${c} 1 5 15 undefined \\S+\n$`));
    expect((await run("condor_q", [String(c), "-af:jt", "JobStatus", "HoldReason"])).stdout)
      .toBe(`${c}.0\t5\tsubmitted on hold at user's request\n${c}.1\t5\tsubmitted on hold at user's request\n`);
    expect((await run("condor_q", [String(c), "-af:j,", "JobStatus", "ProcId"])).stdout).toBe(`${c}.0, 5, 0\n${c}.1, 5, 1\n`);
    expect((await run("condor_q", ["-af", "ProcId", "-", String(c)])).stdout).toBe("0\n1\n");
    expect((await run("condor_q", [String(c), "-limit", "1", "-af", "ProcId"])).stdout).toBe("0\n");
    expect((await run("condor_q", ["-constraint", `ClusterId == ${c} && ProcId == 1`, "-af", "ProcId"])).stdout).toBe("1\n");
    const l = await run("condor_q", [`${c}.0`, "-long", "-attributes", "ClusterId,JobStatus"]);
    expect(l.stdout).toBe(`ClusterId = ${c}\nJobStatus = 5\n\n`);
    const tot = await run("condor_q", [String(c), "-totals", "-json"]);
    const t = JSON.parse(tot.stdout)[0];
    expect(t.MyType).toBe("Summary");
    expect(t.Held).toBe(2);
    const human = await run("condor_q", [String(c)]);
    expect(human.stdout).toStartWith("\n\n-- Schedd: ");
    expect(human.stdout).toContain("Total for query: 2 jobs; 0 completed, 0 removed, 0 idle, 0 running, 2 held, 0 suspended\n");
    const bad = await run("condor_q", ["-constraint", "JobStatus ==", "-json"]);
    expect(bad.code).toBe(1);
    expect((await run("condor_rm", [String(c)])).code).toBe(0);
  }, 30_000);
  test(
    "what changed since a time: ServerTime when -attributes names it, EnteredCurrentStatus set by a status change, time() in a constraint, -totals with ServerTime (docs/htcondor.md#what-changed-since, docs/htcondor.md#counting-without-ads)",
    async () => {
      // The released job runs and stays live (it sleeps) while the test counts it.
      const c = await submit('executable = /bin/sleep\narguments = 300\nhold = true\nMY.Mark = "watch"\nqueue 2\n');
      const attrs = ["-attributes", "ClusterId,ProcId,JobStatus,EnteredCurrentStatus,ServerTime"];
      // queue.cpp: -json asks the schedd for ServerTime; printed when -attributes names it.
      const named = JSON.parse((await run("condor_q", ["-json", ...attrs, String(c)])).stdout);
      expect(named.map((a: Record<string, number>) => Object.keys(a))).toEqual([
        ["ClusterId", "EnteredCurrentStatus", "JobStatus", "ProcId", "ServerTime"],
        ["ClusterId", "EnteredCurrentStatus", "JobStatus", "ProcId", "ServerTime"],
      ]);
      const t0 = named[0].ServerTime as number;
      expect(Math.abs(t0 - Date.now() / 1000)).toBeLessThan(60);
      expect(named[0].EnteredCurrentStatus).toBeLessThanOrEqual(t0);
      // A status change moves EnteredCurrentStatus (schedd.cpp releaseJob); the window finds it and nothing else.
      await new Promise((r) => setTimeout(r, 1100));
      const since = Math.floor(Date.now() / 1000);
      expect((await run("condor_release", [`${c}.1`])).code).toBe(0);
      const window =
        `Mark == "watch" && ((EnteredCurrentStatus >= ${since} && EnteredCurrentStatus <= time()) || (InterLinkStateTime >= ${since} && InterLinkStateTime <= time()))`;
      const changed = JSON.parse((await run("condor_q", ["-json", ...attrs, "-constraint", window])).stdout);
      expect(changed.map((a: Record<string, number>) => `${a.ClusterId}.${a.ProcId}`)).toEqual([`${c}.1`]);
      expect(changed[0].EnteredCurrentStatus).toBeGreaterThanOrEqual(since);
      // Nothing changed since: no ad, and nothing printed (docs/htcondor.md#json-output).
      const later = window.replaceAll(String(since), String(since + 3600));
      expect((await run("condor_q", ["-json", ...attrs, "-constraint", later])).stdout).toBe("");
      // -totals: the summary ad alone, with the schedd's clock (schedd.cpp sendDone).
      const tot = JSON.parse((await run("condor_q", ["-json", "-totals", "-constraint", `Mark == "watch" && JobStatus != 3 && JobStatus != 4`])).stdout);
      expect(tot).toHaveLength(1);
      expect(tot[0]).toMatchObject({ MyType: "Summary", Jobs: 2, ErrorCode: 0 });
      expect(typeof tot[0].ServerTime).toBe("number");
      // answers.log: the ads each answer sent (the summary counts as one).
      const answers = fs.readFileSync(path.join(home, "answers.log"), "utf8").trim().split("\n").slice(-3);
      expect(answers.map((l) => l.split(" ").slice(1, 3).join(" "))).toEqual(["condor_q 1", "condor_q 0", "condor_q 1"]);
      expect((await run("condor_rm", [String(c)])).code).toBe(0);
    },
    30_000,
  );
  test(
    "condor_history: newest first, -forwards, -limit, -match, -scanlimit, -jsonl (docs/htcondor.md#condor_history, test/minicondor/fixtures/more.txt hist-af)",
    async () => {
      const c = await submit("executable = /bin/true\nqueue 3\n");
      await waitDone(`${c}.2`);
      await waitDone(`${c}.0`);
      await waitDone(`${c}.1`);
      const back = (await run("condor_history", [String(c), "-af", "ProcId"])).stdout.trim().split("\n");
      const fwd = (await run("condor_history", [String(c), "-forwards", "-af", "ProcId"])).stdout.trim().split("\n");
      expect(fwd).toEqual([...back].reverse());
      expect((await run("condor_history", [String(c), "-limit", "2", "-af", "ProcId"])).stdout.trim().split("\n").length).toBe(2);
      expect((await run("condor_history", [String(c), "-match", "1", "-af", "ProcId"])).stdout.trim().split("\n").length).toBe(1);
      expect((await run("condor_history", ["-scanlimit", "1", "-af", "ProcId"])).stdout.trim().split("\n").length).toBe(1);
      const jl = (await run("condor_history", [String(c), "-jsonl", "-attributes", "ClusterId,ProcId"])).stdout.trim().split("\n");
      expect(JSON.parse(jl[0]!).ClusterId).toBe(c);
      const hj = await run("condor_history", ["-json", "-constraint", `ClusterId == ${c}`, "-attributes", "ClusterId,ProcId,ExitCode"]);
      expect(hj.stdout).toMatch(/^\[\n\{\n {2}"ClusterId": \d+,\n {2}"ExitCode": 0,\n {2}"ProcId": \d\n\}\n,\n\{/);
    },
    30_000,
  );
});

// ---------------------------------------------------------------------------------------------
describe("condor_rm / condor_hold / condor_release (docs/htcondor.md#condor_rm-condor_hold-condor_release, test/minicondor/fixtures/hold.txt, test/minicondor/fixtures/sleeper.txt, test/minicondor/fixtures/multi.txt)", () => {
  test("rm of a running job, again, not found, cluster not found", async () => {
    const c = await submit("executable = sleeper.sh\noutput = rm.out\nlog = rm.log\nshould_transfer_files = YES\nqueue\n");
    await waitQ(`${c}.0`, ["JobStatus"], "2");
    let r = await run("condor_rm", [`${c}.0`]);
    expect(r).toEqual({ code: 0, stdout: `Job ${c}.0 marked for removal\n`, stderr: "" });
    r = await run("condor_rm", [`${c}.0`]);
    expect(r.code).toBe(1);
    expect([`\nJob ${c}.0 already marked for removal\n`, `\nJob ${c}.0 not found\n`]).toContain(r.stderr);
    expect(await waitDone(`${c}.0`)).toBe("3");
    r = await run("condor_rm", ["999999.0"]);
    expect(r).toEqual({ code: 1, stdout: "", stderr: "\nJob 999999.0 not found\n" });
    // with another job in the queue: cluster not found is exit 1
    const h = await submit("executable = /bin/true\nhold = true\nqueue\n");
    r = await run("condor_rm", ["999999"]);
    expect(r).toEqual({ code: 1, stdout: "", stderr: "\nCouldn't find/remove all jobs in cluster 999999\n" });
    const hist = JSON.parse((await run("condor_history", ["-json", `${c}.0`, "-attributes", "JobStatus,RemoveReason,ExitCode"])).stdout)[0];
    expect(hist.JobStatus).toBe(3);
    expect(hist.RemoveReason).toMatch(/^via condor_rm \(by user .+\)$/);
    expect(hist.ExitCode).toBeUndefined();
    expect(fs.readFileSync(path.join(work, "rm.log"), "utf8")).toContain("Job was aborted.\n\tvia condor_rm (by user ");
    // held then removed: HoldReason moves to LastHoldReason
    // (docs/htcondor.md#clusters-users-and-constraints-one-summary-line)
    r = await run("condor_rm", [String(h)]);
    expect(r).toEqual({ code: 0, stdout: `All jobs in cluster ${h} have been marked for removal\n`, stderr: "" });
    const hh = JSON.parse((await run("condor_history", ["-json", `${h}.0`])).stdout)[0];
    expect(hh.HoldReason).toBeUndefined();
    expect(hh.LastHoldReason).toBe("submitted on hold at user's request");
  }, 30_000);
  test("hold and release a running job; it runs again (test/minicondor/fixtures/hold.txt)", async () => {
    const c = await submit("executable = sleeper.sh\nlog = hold.log\nshould_transfer_files = YES\nqueue 2\n");
    await waitQ(`${c}.1`, ["JobStatus"], "2");
    let r = await run("condor_hold", [`${c}.1`]);
    expect(r).toEqual({ code: 0, stdout: `Job ${c}.1 held\n`, stderr: "" });
    const q = JSON.parse(
      (await run("condor_q", ["-json", `${c}.1`, "-attributes", "ClusterId,ProcId,JobStatus,HoldReason,HoldReasonCode,HoldReasonSubCode"])).stdout,
    )[0];
    expect(q).toEqual({ ClusterId: c, ProcId: 1, JobStatus: 5, HoldReason: q.HoldReason, HoldReasonCode: 1, HoldReasonSubCode: 0 });
    expect(q.HoldReason).toMatch(/^via condor_hold \(by user .+\)$/);
    r = await run("condor_hold", [`${c}.1`]);
    expect(r).toEqual({ code: 1, stdout: "", stderr: `\nJob ${c}.1 already held\n` });
    r = await run("condor_hold", ["999999.0"]);
    expect(r).toEqual({ code: 1, stdout: "", stderr: "\nJob 999999.0 not found\n" });
    r = await run("condor_release", [`${c}.0`]);
    expect(r).toEqual({ code: 1, stdout: "", stderr: `\nJob ${c}.0 not held to be released\n` });
    // the process tree of the held job is gone
    await waitFor(async () => !(await run("condor_status", ["-af", "JobId"])).stdout.includes(`${c}.1`), 5000);
    r = await run("condor_release", [`${c}.1`]);
    expect(r).toEqual({ code: 0, stdout: `Job ${c}.1 released\n`, stderr: "" });
    await waitQ(`${c}.1`, ["JobStatus", "NumJobStarts", "LastHoldReasonCode"], "2 2 1");
    const log = fs.readFileSync(path.join(work, "hold.log"), "utf8");
    expect(log).toContain("Job was held.\n\tvia condor_hold (by user ");
    expect(log).toContain("Job was released.\n\tvia condor_release (by user ");
    const me = await qAf(`${c}.0`, ["Owner"]);
    r = await run("condor_hold", ["-constraint", `ClusterId == ${c}`]);
    expect(r.stdout).toBe(`All jobs matching constraint (ClusterId == ${c}) have been held\n`);
    r = await run("condor_rm", [me]);
    expect(r).toEqual({ code: 0, stdout: `All jobs of user "${me}" have been marked for removal\n`, stderr: "" });
    await waitDone(`${c}.0`);
    await waitDone(`${c}.1`);
    r = await run("condor_rm", ["-all"]);
    expect(r).toEqual({ code: 0, stdout: "", stderr: "condor_rm:0:There are no jobs in the queue\n" });
  }, 30_000);
  test("condor_rm kills a job that ignores SIGTERM after JobMaxVacateTime, with its children", async () => {
    writeFile("stubborn.sh", "#!/bin/bash\ntrap '' TERM\n( trap '' TERM; while :; do sleep 0.1; done ) &\nwhile :; do sleep 0.1; done\n", 0o755);
    const c = await submit("executable = stubborn.sh\njob_max_vacate_time = 1\nshould_transfer_files = YES\nqueue\n");
    await waitQ(`${c}.0`, ["JobStatus"], "2");
    const t0 = Date.now();
    expect((await run("condor_rm", [`${c}.0`])).code).toBe(0);
    expect(await waitDone(`${c}.0`)).toBe("3");
    expect(Date.now() - t0).toBeGreaterThan(900);
    expect(pidsWithEnv(`_CONDOR_SCRATCH_DIR=${path.join(home, "execute")}`).length).toBe(0);
  }, 30_000);
  test(
    "stop = one soft kill to the job's own pid, SIGKILL to everything after JobMaxVacateTime (test/minicondor/README.md; docs/htcondor.md#clusters-users-and-constraints-one-summary-line)",
    async () => {
      // the starter signals the job process only (kill_sig / remove_kill_sig / hold_kill_sig, default SIGTERM):
      // a child in the same process group hears nothing until the hard kill
      writeFile(
        "stopme.sh",
        `#!/bin/bash
log=$1
trap 'echo term >> $log.main' TERM
trap 'echo usr1 >> $log.main' USR1
( trap 'echo term >> $log.child' TERM; while :; do sleep 0.1; done ) &
echo $! > $log.childpid
while :; do sleep 0.1; done
`,
        0o755,
      );
      const stopFiles = (tag: string) => path.join(work, `stop-${tag}`);
      const started = async (tag: string) =>
        waitFor(() => fs.existsSync(stopFiles(tag) + ".childpid") && fs.readFileSync(stopFiles(tag) + ".childpid", "utf8").trim() !== "", 10_000);
      const lines = (f: string) => (fs.existsSync(f) ? fs.readFileSync(f, "utf8").trim().split("\n") : []);
      const rmTag = "rm";
      const c = await submit(`executable = stopme.sh\narguments = ${stopFiles(rmTag)}\njob_max_vacate_time = 2\nshould_transfer_files = YES\nqueue\n`);
      await waitQ(`${c}.0`, ["JobStatus"], "2");
      await started(rmTag);
      const childPid = Number(fs.readFileSync(stopFiles(rmTag) + ".childpid", "utf8"));
      const t0 = Date.now();
      expect((await run("condor_rm", [`${c}.0`])).code).toBe(0);
      expect(await waitDone(`${c}.0`)).toBe("3");
      expect(Date.now() - t0).toBeGreaterThan(1800); // the job trapped TERM: only the hard kill ended it
      expect(lines(stopFiles(rmTag) + ".main")).toEqual(["term"]);
      expect(lines(stopFiles(rmTag) + ".child")).toEqual([]);
      expect(pidAlive(childPid)).toBe(false);
      // hold_kill_sig picks the signal of condor_hold
      const holdTag = "hold";
      const h = await submit(
        `executable = stopme.sh\narguments = ${stopFiles(holdTag)}\njob_max_vacate_time = 1\nhold_kill_sig = SIGUSR1\nshould_transfer_files = YES\nqueue\n`,
      );
      await waitQ(`${h}.0`, ["JobStatus"], "2");
      await started(holdTag);
      expect(await qAf(`${h}.0`, ["HoldKillSig"])).toBe("SIGUSR1");
      expect((await run("condor_hold", [`${h}.0`])).code).toBe(0);
      await waitFor(async () => !(await run("condor_status", ["-af", "JobId"])).stdout.includes(`${h}.0`), 10_000);
      expect(lines(stopFiles(holdTag) + ".main")).toEqual(["usr1"]);
      expect(lines(stopFiles(holdTag) + ".child")).toEqual([]);
      expect(pidsWithEnv(`_CONDOR_SCRATCH_DIR=${path.join(home, "execute")}`).length).toBe(0);
      await run("condor_rm", [String(h)]);
    },
    30_000,
  );
  test("job_max_vacate_time = 0 stays 0: no grace at all; unset means no attribute (test/minicondor/fixtures/hello.txt q-json-idle)", async () => {
    writeFile("deaf.sh", "#!/bin/bash\ntrap '' TERM\nwhile :; do sleep 0.1; done\n", 0o755);
    const c = await submit("executable = deaf.sh\njob_max_vacate_time = 0\nshould_transfer_files = YES\nqueue\n");
    const j = JSON.parse((await run("condor_q", ["-json", `${c}.0`])).stdout)[0];
    expect(j.JobMaxVacateTime).toBe(0);
    expect(j.FileSystemDomain).toBeUndefined(); // should_transfer_files = YES: no FileSystemDomain, as observed
    await waitQ(`${c}.0`, ["JobStatus"], "2");
    const t0 = Date.now();
    await run("condor_rm", [`${c}.0`]);
    expect(await waitDone(`${c}.0`)).toBe("3");
    expect(Date.now() - t0).toBeLessThan(5000); // far from the 10 s a job without job_max_vacate_time gets
  });
  test(
    "cluster and -constraint together act on their intersection, one summary line (docs/htcondor.md#clusters-users-and-constraints-one-summary-line)",
    async () => {
      const a = await submit("executable = /bin/true\nhold = true\nqueue 3\n");
      const b = await submit("executable = sleeper.sh\nshould_transfer_files = YES\nhold = true\nqueue 2\n");
      let r = await run("condor_rm", [String(a), "-constraint", "ProcId == 1"]);
      expect(r).toEqual({ code: 0, stdout: `All jobs matching constraint ((ClusterId == ${a}) && (ProcId == 1)) have been marked for removal\n`, stderr: "" });
      expect((await run("condor_q", [String(a), String(b), "-af:j", "JobStatus"])).stdout).toBe(`${a}.0 5\n${a}.2 5\n${b}.0 5\n${b}.1 5\n`);
      r = await run("condor_release", ["-constraint", "ProcId == 0", String(b)]);
      expect(r).toEqual({ code: 0, stdout: `All jobs matching constraint ((ClusterId == ${b}) && (ProcId == 0)) have been released\n`, stderr: "" });
      expect((await run("condor_q", [String(a), String(b), "-af:j", "JobStatus"])).stdout).toMatch(
        new RegExp(`^${a}\\.0 5\n${a}\\.2 5\n${b}\\.0 [12]\n${b}\\.1 5\n$`),
      );
      // several clusters: one request, ORed, one line
      r = await run("condor_hold", [String(a), String(b)]);
      expect(r).toEqual({ code: 0, stdout: `All jobs matching constraint (ClusterId == ${a} || ClusterId == ${b}) have been held\n`, stderr: "" });
      r = await run("condor_rm", [String(a), "-constraint", "ProcId == 7"]);
      expect(r).toEqual({ code: 1, stdout: "", stderr: `\nCouldn't find/remove all jobs matching constraint ((ClusterId == ${a}) && (ProcId == 7))\n` });
      expect((await run("condor_rm", [String(a), String(b)])).code).toBe(0);
    },
    30_000,
  );
  test("a job killed by a signal: ExitBySignal/ExitSignal; stray children killed at exit (docs/htcondor.md#job-status-and-job-attributes)", async () => {
    writeFile("selfkill.sh", "#!/bin/bash\nsleep 300 &\nkill -9 $$\n", 0o755);
    const c = await submit("executable = selfkill.sh\nshould_transfer_files = YES\nqueue\n");
    expect(await waitDone(`${c}.0`)).toBe("4");
    expect(await histAf(`${c}.0`, ["ExitBySignal", "ExitSignal", "ExitCode"])).toBe("true 9 undefined\n");
    expect(pidsWithEnv(`_CONDOR_SCRATCH_DIR=${path.join(home, "execute")}`).length).toBe(0);
  }, 30_000);
});

// ---------------------------------------------------------------------------------------------
describe("memory enforcement: the kernel's OOM killer and the starter's hold (README: Memory, docs/status.md#memory-kills)", () => {
  // allocates 200 MB in a child, as the acceptance pod does; says what the child ended with
  const HOG = `#!/bin/bash
echo before > made.txt
echo "allocating"
/usr/bin/python3 -c 'import time; x = b"x" * (200 * 1024 * 1024); print("allocated", flush=True); time.sleep(60)'
echo "child ended $?"
exit 3
`;
  test("a job over its request_memory is OOM killed and held 34/102 with the starter's words; no exit, no output back, a 012 event", async () => {
    const h = newHome({ enforceMemory: true });
    // what the job's own process sees: its child SIGKILLed (137), then the graceful stop of a held job
    const seen = path.join(work, "hog-seen.txt");
    writeFile(
      "hog.sh",
      HOG.replace('echo "child ended $?"\nexit 3', `echo "child ended $?" >> ${seen}\ntrap 'echo SIGTERM >> ${seen}; exit 143' TERM\nsleep 60 & wait`),
      0o755,
    );
    const c = await submit("executable = hog.sh\noutput = hog.out\nlog = hog.log\nrequest_memory = 50\nshould_transfer_files = YES\nqueue\n", [], { home: h });
    await waitQ(`${c}.0`, ["JobStatus"], "5", { home: h, timeoutMs: 30_000 });
    const ad = JSON.parse((await run("condor_q", ["-json", `${c}.0`], { home: h })).stdout)[0];
    expect(ad.HoldReasonCode).toBe(34);
    expect(ad.HoldReasonSubCode).toBe(102);
    expect(ad.HoldReason).toMatch(
      /^Error from slot1_\d+@\S+: Job has gone over cgroup memory limit of 50 megabytes\. Last measured usage: 50 megabytes\. {2}Consider resubmitting with a higher request_memory\.$/,
    );
    // the job did not exit: no ExitSignal or ExitCode; ExitBySignal keeps condor_submit's false
    for (const a of ["ExitSignal", "ExitCode"]) expect(ad[a]).toBeUndefined();
    expect(ad.ExitBySignal).toBe(false);
    expect(ad.ResidentSetSize).toBeGreaterThan(50 * 1024);
    // a held job sends nothing back
    expect(fs.existsSync(path.join(work, "made.txt"))).toBe(false);
    expect(fs.existsSync(path.join(work, "hog.out"))).toBe(false);
    const log = fs.readFileSync(path.join(work, "hog.log"), "utf8");
    expect(log).toMatch(
      new RegExp(
        `012 \\(${String(c).padStart(3, "0")}\\.000\\.000\\) [^\\n]* Job was held\\.\\n\\t${escapeRe(ad.HoldReason)}\\n\\tCode 34 Subcode 102\\n\\.\\.\\.\\n`,
      ),
    );
    expect(log).not.toContain("Job terminated.");
    await waitFor(() => fs.existsSync(seen) && fs.readFileSync(seen, "utf8").includes("SIGTERM"), 20_000);
    expect(fs.readFileSync(seen, "utf8")).toBe("child ended 137\nSIGTERM\n");
    expect(pidsWithEnv(`_CONDOR_SCRATCH_DIR=${path.join(h, "execute")}`).length).toBe(0);
  }, 60_000);

  test("under its request, or with enforcement off, the same job runs to its end", async () => {
    const on = newHome({ enforceMemory: true });
    const off = newHome();
    writeFile("hog2.sh", HOG.replace("time.sleep(60)", "time.sleep(0)"), 0o755);
    const a = await submit("executable = hog2.sh\noutput = big.out\nrequest_memory = 1024\nshould_transfer_files = YES\nqueue\n", [], { home: on });
    const b = await submit("executable = hog2.sh\noutput = off.out\nrequest_memory = 50\nshould_transfer_files = YES\nqueue\n", [], { home: off });
    expect(await waitDone(`${a}.0`, { home: on, timeoutMs: 30_000 })).toBe("4");
    expect(await waitDone(`${b}.0`, { home: off, timeoutMs: 30_000 })).toBe("4");
    expect(fs.readFileSync(path.join(work, "big.out"), "utf8")).toBe("allocating\nallocated\nchild ended 0\n");
    expect(fs.readFileSync(path.join(work, "off.out"), "utf8")).toBe("allocating\nallocated\nchild ended 0\n");
  }, 60_000);
});

// ---------------------------------------------------------------------------------------------
describe("-name, -pool, -remote: this machine's schedd and collector are the only ones", () => {
  // minicondor's default host: the short host name (README, config "host")
  const host = () => os.hostname().split(".")[0] || "localhost";
  test("condor_q (docs/htcondor.md#remote-schedds-and-condor_q-errors)", async () => {
    expect(await run("condor_q", ["-name", "nosuch.example.org", "-af", "ClusterId"])).toEqual({
      code: 1,
      stdout: "",
      stderr: "Error: Collector has no record of schedd/submitter\n",
    });
    expect(await run("condor_q", ["-name", host(), "-pool", "cm.example.org:9618", "-af", "ClusterId"])).toEqual({
      code: 1,
      stdout: "",
      stderr: "Error: Couldn't contact the condor_collector on cm.example.org:9618.\n",
    });
    expect((await run("condor_q", ["-name", host(), "-pool", "localhost:9618", "-af", "ClusterId"])).code).toBe(0);
    // -scanlimit and -match are condor_history's options (queue.cpp processCommandLineArguments has neither)
    for (const opt of ["-scanlimit", "-match"]) {
      const r = await run("condor_q", [opt, "5", "-af", "ClusterId"]);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(`Error: unrecognized argument ${opt}\n`);
      expect(r.stdout).toStartWith("Usage: condor_q [general-opts] [restriction-list] [output-opts | analyze-opts]\n");
    }
    expect(await run("condor_q", ["-limit", "0"])).toEqual({ code: 1, stdout: "", stderr: "Error: 0 is not a valid for -limit.\n" });
  });
  test("condor_submit: -name, -pool, -remote = -name + -spool (docs/htcondor.md#condor_submit-exit-codes-and-errors, docs/htcondor.md#condor_submit-options)", async () => {
    writeFile("remote.sub", "executable = /bin/true\nshould_transfer_files = YES\nqueue\n");
    expect(await run("condor_submit", ["-terse", "-name", "nosuch.example.org", "remote.sub"])).toEqual({
      code: 1,
      stdout: "",
      stderr: "\nERROR: Can't find address of schedd nosuch.example.org\n",
    });
    expect(await run("condor_submit", ["-terse", "-remote", "nosuch.example.org", "remote.sub"])).toEqual({
      code: 1,
      stdout: "",
      stderr: "\nERROR: Can't find address of schedd nosuch.example.org\n",
    });
    expect((await run("condor_submit", ["-terse", "-name", host(), "-pool", "cm.example.org", "remote.sub"])).code).toBe(1);
    const r = await run("condor_submit", ["-terse", "-remote", host(), "-pool", "localhost", "remote.sub"]);
    expect(r.code).toBe(0);
    const c = r.stdout.split(".")[0]!;
    const q = JSON.parse((await run("condor_q", ["-json", `${c}.0`, "-attributes", "Iwd,SUBMIT_Iwd,JobStatus,HoldReasonCode"])).stdout)[0];
    expect(q.Iwd).toBe(path.join(home, "spool", c, "0", `cluster${c}.proc0.subproc0`));
    expect(q.SUBMIT_Iwd).toBe(work);
    await run("condor_rm", [c]);
  });
  test("condor_rm / condor_hold: an unknown schedd (docs/htcondor.md#clusters-users-and-constraints-one-summary-line, src/condor_rm.V6/rm.cpp)", async () => {
    // without -pool the tool asks the collector itself; with -pool the schedd lookup fails
    expect(await run("condor_rm", ["-name", "nosuch.example.org", "1.0"])).toEqual({
      code: 1,
      stdout: "",
      stderr: "Error: cannot get address of schedd nosuch.example.org\n",
    });
    expect(await run("condor_hold", ["-name", "nosuch.example.org", "-pool", "localhost", "1.0"])).toEqual({
      code: 1,
      stdout: "",
      stderr: "condor_hold: Can't find address for schedd nosuch.example.org\n",
    });
    expect((await run("condor_rm", ["-name", host(), "999999.0"])).stderr).toBe("\nJob 999999.0 not found\n");
  });
  test("condor_history (docs/htcondor.md#condor_history)", async () => {
    expect(await run("condor_history", ["-name", "nosuch.example.org", "-json"])).toEqual({
      code: 1,
      stdout: "",
      stderr: "Unable to locate remote schedd (name=nosuch.example.org, pool=).\n",
    });
    expect(await run("condor_history", ["-name", host(), "-pool", "cm.example.org", "-json"])).toEqual({
      code: 1,
      stdout: "",
      stderr: `Unable to locate remote schedd (name=${host()}, pool=cm.example.org).\n`,
    });
    expect((await run("condor_history", ["-name", host(), "-json", "999999.0"])).stdout).toBe("[\n]\n");
  });
  test("condor_tail (docs/htcondor.md#condor_tail, src/condor_tools/tail.cpp)", async () => {
    expect(await run("condor_tail", ["-name", "nosuch.example.org", "999999.0"])).toEqual({
      code: 1,
      stdout: "",
      stderr: "No such schedd named nosuch.example.org in local pool\n",
    });
    expect(await run("condor_tail", ["-pool", "cm.example.org", "-name", host(), "999999.0"])).toEqual({
      code: 1,
      stdout: "",
      stderr: `No such schedd named ${host()} in pool cm.example.org\n`,
    });
    expect(await run("condor_tail", ["-name", host(), "999999.0"])).toEqual({ code: 1, stdout: "", stderr: "No such job: 999999.0\n" });
  });
  test("condor_transfer_data (docs/htcondor.md#condor_transfer_data, src/condor_tools/transfer_data.cpp)", async () => {
    expect(await run("condor_transfer_data", ["-name", "nosuch.example.org", "1"])).toEqual({
      code: 1,
      stdout: "",
      stderr: "condor_transfer_data: Can't find address for schedd nosuch.example.org\n",
    });
    expect(await run("condor_transfer_data", ["-name", host(), "-pool", "localhost", "999999"])).toEqual({
      code: 0,
      stdout: "Fetching data files...\n",
      stderr: "",
    });
  });
  test("condor_status has no -name; -pool and -debug are fine (docs/htcondor.md#condor_status, src/condor_status.V6/status.cpp firstPass)", async () => {
    const r = await run("condor_status", ["-name", host(), "-af", "Name"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toStartWith(`Error:  Unknown option -name\nUsage: condor_status [help-opt] [query-opt] [custom-opts] [display-opts] [name ...]\n`);
    expect((await run("condor_status", ["-pool", "localhost", "-debug", "-af", "Name"])).stdout).toMatch(/^slot1@/);
    expect((await run("condor_status", ["-pool", "cm.example.org", "-af", "Name"])).code).toBe(1);
  });
});

// ---------------------------------------------------------------------------------------------
describe("slots and condor_status (docs/htcondor.md#condor_status, test/minicondor/fixtures/status.txt)", () => {
  test("jobs stay Idle when the machine is full; status -totals format", async () => {
    const h = newHome({ cpus: 1, memory: 1024 });
    const o = { home: h };
    const c = await submit("executable = sleeper.sh\nshould_transfer_files = YES\nqueue 2\n", [], o);
    await waitQ(`${c}.0`, ["JobStatus"], "2", o);
    await Bun.sleep(300);
    expect(await qAf(`${c}.1`, ["JobStatus"], o)).toBe("1");
    const big = await submit("executable = /bin/true\nrequest_memory = 2G\nqueue\n", [], o);
    const t = await run("condor_status", ["-totals"], o);
    expect(t.code).toBe(0);
    expect(t.stdout).toBe(
      "\n               Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle\n\n" +
        "  X86_64/LINUX     2     0       1         1       0          0      0        0      0\n\n" +
        "         Total     2     0       1         1       0          0      0        0      0\n",
    );
    const js = JSON.parse(
      (await run("condor_status", ["-json", "-attributes", "Name,State,Activity,Cpus,Memory,SlotType", "-constraint", 'SlotType == "Partitionable"'], o))
        .stdout,
    );
    expect(js[0]).toEqual({ Activity: "Idle", Cpus: 0, Memory: 896, Name: js[0].Name, SlotType: "Partitionable", State: "Unclaimed" });
    expect(js[0].Name).toMatch(/^slot1@/);
    const af = await run("condor_status", ["-af", "TotalCpus", "TotalMemory", "TotalGPUs", "Arch", "OpSys"], o);
    expect(af.stdout.split("\n")[0]).toBe("1 1024 0 X86_64 LINUX");
    expect((await run("condor_status", ["-json", "-constraint", "false"], o)).stdout).toBe("");
    // free the slot: the idle job starts
    await run("condor_rm", [`${c}.0`], o);
    await waitQ(`${c}.1`, ["JobStatus"], "2", o);
    expect(await qAf(`${big}.0`, ["JobStatus"], o)).toBe("1");
    await run("condor_rm", ["-all"], o);
  });
});

// ---------------------------------------------------------------------------------------------
describe("condor_chirp (docs/htcondor.md#condor_chirp, docs/htcondor.md#what-condor_chirp-does-to-strings)", () => {
  test(
    "put writes the file relative to the job's Iwd with -perm; refused without WantIOProxy (condor_chirp.cpp chirp_put, NTreceivers.cpp CONDOR_putfile, baseshadow.cpp chdir)",
    async () => {
      const h = newHome();
      const dir = fs.mkdtempSync(path.join(work, "put-"));
      writeFile(
        "put.sh",
        `#!/bin/bash
chirp=$_CONDOR_BIN/../libexec/condor_chirp
printf 'line one\\nline two\\n' > local.txt
$chirp put -perm 600 local.txt kept.txt; echo "rc=$?"
`,
        0o755,
        dir,
      );
      const c = await submit("executable = put.sh\noutput = put.out\nwant_io_proxy = true\nshould_transfer_files = YES\nqueue\n", [], { home: h, cwd: dir });
      expect(await waitDone(`${c}.0`, { home: h })).toBe("4");
      expect(fs.readFileSync(path.join(dir, "put.out"), "utf8")).toBe("rc=0\n");
      expect(fs.readFileSync(path.join(dir, "kept.txt"), "utf8")).toBe("line one\nline two\n");
      expect(fs.statSync(path.join(dir, "kept.txt")).mode & 0o777).toBe(0o600);
      fs.rmSync(path.join(dir, "kept.txt"));
      const d = await submit("executable = put.sh\noutput = put2.out\nshould_transfer_files = YES\nqueue\n", [], { home: h, cwd: dir });
      expect(await waitDone(`${d}.0`, { home: h })).toBe("4");
      expect(fs.readFileSync(path.join(dir, "put2.out"), "utf8")).toBe("\tError: 22 (Invalid argument)\nrc=255\n");
      expect(fs.existsSync(path.join(dir, "kept.txt"))).toBe(false);
    },
    60_000,
  );

  test("set_job_attr is visible in condor_q at once; string table; get_job_attr; ulog; delayed", async () => {
    setConfig(home, { scheddIdleExitMs: 1500, pollMs: 50, delayedUpdateMs: 300 });
    writeFile(
      "chirp.sh",
      `#!/bin/bash
chirp=$_CONDOR_BIN/../libexec/condor_chirp
$chirp set_job_attr ChirpTestAttr '"set-by-chirp"'; echo "rc=$?"
$chirp set_job_attr ChirpTestNum 42
$chirp set_job_attr S1 '"plain text"'
$chirp set_job_attr S2 '"dq \\"inside\\" end"'
$chirp set_job_attr S3 '"bs \\\\ end"'
$chirp set_job_attr S4 '"sq '"'"' end"'
$chirp set_job_attr S5 '"newline
end"'; echo "rc5=$?"
$chirp set_job_attr S6 'unquoted words'; echo "rc6=$?"
$chirp set_job_attr S7 7
$chirp get_job_attr ClusterId
$chirp set_job_attr_delayed ChirpDelayedAttr 7; echo "rcd=$?"
$chirp ulog "hello from chirp ulog"; echo "rcu=$?"
touch chirped
sleep 30
`,
      0o755,
    );
    const c = await submit("executable = chirp.sh\noutput = chirp.out\nlog = chirp.log\n+WantIOProxy = true\nshould_transfer_files = YES\nqueue\n");
    await waitFor(async () => (await qAf(`${c}.0`, ["S7"])) === "7", 15_000);
    const j = JSON.parse((await run("condor_q", ["-json", `${c}.0`, "-attributes", "ChirpTestAttr,ChirpTestNum,S1,S2,S3,S4,S5,S6,S7"])).stdout)[0];
    expect(j).toEqual({
      ChirpTestAttr: "set-by-chirp",
      ChirpTestNum: 42,
      S1: "plain text",
      S2: 'dq "inside" end',
      S3: "bs \\\\ end",
      S4: "sq ' end",
      S5: null,
      S6: null,
      S7: 7,
    });
    expect(await qAf(`${c}.0`, ["S3", "S5", "S6"])).toBe("bs \\\\ end undefined undefined");
    await waitFor(async () => (await qAf(`${c}.0`, ["ChirpDelayedAttr"])) === "7", 10_000);
    await waitFor(() => fs.readFileSync(path.join(home, "calls.log"), "utf8").includes('condor_chirp ["ulog"'), 10_000);
    const log = fs.readFileSync(path.join(work, "chirp.log"), "utf8");
    expect(log).toContain(`Setting job attribute ChirpTestAttr to "set-by-chirp"\n...\n`);
    expect(log).toContain(" hello from chirp ulog\n...\n");
    expect(log).toMatch(/^008 \(/m);
    expect((await run("condor_tail", [`${c}.0`])).stdout).toBe(`rc=0\nrc5=0\nrc6=0\n${c}\nrcd=0\nrcu=0\n`);
    await run("condor_rm", [`${c}.0`]);
    await waitDone(`${c}.0`);
    expect(fs.existsSync(path.join(work, "chirp.out"))).toBe(false); // removed jobs transfer no output (ON_EXIT)
    expect(await histAf(`${c}.0`, ["ChirpTestAttr", "ChirpDelayedAttr"])).toBe("set-by-chirp 7\n");
  }, 30_000);
  test("a job's calls go to its schedd, which knows the job by the cookie of its .chirp.config, not by the ids the job can rewrite in it; the answers are the tool's, byte for byte", async () => {
    // the schedd formats a served call's events with its home's config, as the tool does
    setConfig(home, { scheddIdleExitMs: 1500, pollMs: 50, userlogFormatOptions: "UTC" });
    writeFile("victim.sh", "#!/bin/bash\nsleep 30\n", 0o755);
    const victim = await submit("executable = victim.sh\n+WantIOProxy = true\nshould_transfer_files = YES\nqueue\n");
    const out = fs.mkdtempSync(path.join(work, "served-"));
    writeFile(
      "served.sh",
      `#!/bin/bash
chirp=$_CONDOR_BIN/../libexec/condor_chirp
calls() { # one line per call: the call | exit code | stdout | stderr
  local line; local -a c
  while IFS= read -r line; do
    eval "c=($line)"
    o=$($chirp "\${c[@]}" 2>e.tmp); rc=$?
    printf '%s|%s|%s|%s\\n' "$line" "$rc" "$o" "$(<e.tmp)"
  done <<'CALLS'
get_job_attr ClusterId
get_job_attr NoSuchAttr
set_job_attr ChirpU '"héllo ✓"'
get_job_attr ChirpU
set_job_attr Owner 1
set_job_attr 'bad name' 1
set_job_attr OnlyOne
set_job_attr_delayed NotChirp 1
get_job_attr_delayed ChirpU
ulog 'hello twice'
phase x
CALLS
}
calls > "$2/served.txt"
# a fault of another tool in the environment: the tool answers, as it does without the service
MINICONDOR_FAULT_CONDOR_VERSION=warn calls > "$2/tool.txt"
sed 's/"cluster":[0-9]*/"cluster":'"$1"'/' "$_CONDOR_CHIRP_CONFIG" > forged.config
_CONDOR_CHIRP_CONFIG=$PWD/forged.config $chirp set_job_attr ChirpForged 1; echo "forged rc=$?" > "$2/forged.txt"
sleep 30
`,
      0o755,
    );
    const c = await submit(`executable = served.sh\narguments = ${victim} ${out}\nlog = served.log\n+WantIOProxy = true\nshould_transfer_files = YES\nqueue\n`);
    await waitFor(() => fs.existsSync(path.join(out, "forged.txt")), scaled(20_000));
    expect(fs.readFileSync(path.join(out, "forged.txt"), "utf8")).toBe("forged rc=0\n");
    // the forged cluster was not believed: the attribute is the caller's, the other job's ad is untouched
    expect(await qAf(`${c}.0`, ["ChirpForged"])).toBe("1");
    expect(await qAf(`${victim}.0`, ["ChirpForged"])).toBe("undefined");
    const served = fs.readFileSync(path.join(out, "served.txt"), "utf8");
    expect(served).toContain(`get_job_attr ClusterId|0|${c}|\n`);
    expect(served).toContain(`get_job_attr ChirpU|0|"héllo ✓"|\n`);
    expect(served).toContain("set_job_attr Owner 1|255|\tError: 13 (Permission denied)|\n");
    expect(served).toContain("set_job_attr OnlyOne|1||Usage: condor_chirp set_job_attr AttributeName AttributeValue\n");
    expect(fs.readFileSync(path.join(out, "tool.txt"), "utf8")).toBe(served);
    const events = fs.readFileSync(path.join(work, "served.log"), "utf8").split("\n").filter((l) => /^\d{3} \(/.test(l));
    expect(events.filter((l) => l.endsWith(" hello twice"))).toHaveLength(2);
    for (const l of events) expect(l).toMatch(/^\d{3} \(\d{3}\.\d{3}\.\d{3}\) \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ /);
    await run("condor_rm", [`${c}.0`, `${victim}.0`]);
    await waitDone(`${c}.0`);
    setConfig(home, { scheddIdleExitMs: 1500, pollMs: 50 });
  });
  test("without WantIOProxy: Error 22 on stdout, exit 255; get_job_attr (null); outside a job (docs/htcondor.md#key-observations)", async () => {
    writeFile(
      "nochirp.sh",
      `#!/bin/bash
chirp=$_CONDOR_BIN/../libexec/condor_chirp
$chirp set_job_attr Foo 1 > sj.txt; echo "rc=$?" >> sj.txt
$chirp get_job_attr ClusterId > gj.txt
$chirp set_job_attr_delayed ChirpX 1; echo "rcd=$?" >> sj.txt
`,
      0o755,
    );
    const c = await submit("executable = nochirp.sh\nshould_transfer_files = YES\ntransfer_output_files = sj.txt, gj.txt\nqueue\n");
    await waitDone(`${c}.0`);
    expect(fs.readFileSync(path.join(work, "sj.txt"), "utf8")).toBe("\tError: 22 (Invalid argument)\nrc=255\nrcd=0\n");
    expect(fs.readFileSync(path.join(work, "gj.txt"), "utf8")).toBe("(null)\n");
    const r = await runTool(home, "condor_chirp", ["set_job_attr", "Foo", "1"], { cwd: work });
    expect(r).toEqual({
      code: 255,
      stdout: "\tError: 2 (No such file or directory)\n",
      stderr: "Can't open ./.chirp.config file\ncannot chirp_connect to condor_starter\n",
    });
  });
});

// ---------------------------------------------------------------------------------------------
describe("the schedd's service (test/minicondor/README.md#the-schedds-service)", () => {
  test("a running schedd answers condor_q and condor_history itself, byte for byte as the tool; the tool answers when no schedd says where it is", async () => {
    const h = newHome();
    const dir = fs.mkdtempSync(path.join(work, "service-"));
    writeFile("quick.sh", "#!/bin/bash\necho done\n", 0o755, dir);
    writeFile("long.sh", "#!/bin/bash\nsleep 60\n", 0o755, dir);
    const done = await submit("executable = quick.sh\nqueue\n", [], { home: h, cwd: dir });
    expect(await waitDone(`${done}.0`, { home: h })).toBe("4");
    const running = await submit("executable = long.sh\nqueue 2\n", [], { home: h, cwd: dir });
    await waitQ(`${running}.1`, ["JobStatus"], "2", { home: h });
    const service = path.join(h, "service");
    expect(fs.readFileSync(service, "utf8")).toMatch(/^\d+ [0-9a-f]{32}\n$/);
    const queries = [
      ["condor_q"],
      ["condor_q", "-json", "-attributes", "ClusterId,ProcId,JobStatus,Cmd"],
      ["condor_q", "-af", "ClusterId", "ProcId", "-constraint", "JobStatus == 2"],
      ["condor_q", "-totals"],
      ["condor_q", `${running}.1`, "-l"],
      ["condor_q", "999.0"],
      ["condor_q", "-nosuchoption"],
      ["condor_history", "-limit", "1", "-af", "ClusterId", "ExitCode"],
      ["condor_history", `${done}.0`, "-json"],
    ];
    // a listing's header and a long ad's ServerTime say when it was asked, to the second
    const ask = async (q: string[], env: Record<string, string> = {}) => {
      const r = await run(q[0]!, q.slice(1), { home: h, cwd: dir, env });
      return { ...r, stdout: r.stdout.replace(/ @ \d\d\/\d\d\/\d\d \d\d:\d\d:\d\d/g, " @ <when>").replace(/^ServerTime = \d+$/m, "ServerTime = <now>") };
    };
    // With no Bun to run (MINICONDOR_BUN), only the schedd can answer.
    const served = [];
    for (const q of queries) served.push(await ask(q, { MINICONDOR_BUN: "/bin/false" }));
    fs.renameSync(service, `${service}.hidden`);
    try {
      expect(await ask(["condor_q"], { MINICONDOR_BUN: "/bin/false" })).toEqual({ code: 1, stdout: "", stderr: "" });
      for (const [i, q] of queries.entries()) expect([q, await ask(q)]).toEqual([q, served[i]!]);
    } finally {
      fs.renameSync(`${service}.hidden`, service);
    }
    expect(served[0]!.stdout).toContain(`ID: ${running}`);
    expect(served[2]!.stdout).toBe(`${running} 0\n${running} 1\n`);
    expect(served[6]!.code).not.toBe(0);
    expect(served[7]!.stdout).toBe(`${done} 0\n`);
    // a fault set in the caller's environment: the tool answers (here, no tool at all)
    expect((await ask(["condor_q"], { MINICONDOR_BUN: "/bin/false", MINICONDOR_FAULT_CONDOR_Q: "warn" })).code).toBe(1);
    await run("condor_rm", ["-all"], { home: h });
  });
});

// ---------------------------------------------------------------------------------------------
describe("condor_tail (docs/htcondor.md#condor_tail, test/minicondor/fixtures/sleeper.txt / test/minicondor/fixtures/tail_f.txt / test/minicondor/fixtures/tail_idle.txt)", () => {
  test("stdout, -no-stdout -stderr, -maxbytes, unauthorized file, -f, not in queue, idle hangs", async () => {
    const c = await submit(
      "executable = sleeper.sh\noutput = tail.out\nerror = tail.err\ntransfer_output_files = ok.txt\nshould_transfer_files = YES\nqueue\n",
    );
    await waitQ(`${c}.0`, ["JobStatus"], "2");
    // Running (JobStatus 2) comes before the job has printed anything: the tail is asked again
    // until it shows the first lines, instead of 700 ms later.
    let r: RunResult = await waitFor(async () => {
      const t = await run("condor_tail", [`${c}.0`]);
      return /^sleeper start\ntick 1\n/.test(t.stdout) ? t : undefined;
    }, 15_000) as RunResult;
    expect(r.code).toBe(0);
    r = await run("condor_tail", ["-no-stdout", "-stderr", String(c)]);
    expect(r).toEqual({ code: 0, stdout: "stderr line\n", stderr: "" });
    r = await run("condor_tail", ["-maxbytes", "7", `${c}.0`]);
    expect(r.stdout.length).toBe(7);
    expect(r.stdout).toEndWith("\n");
    r = await run("condor_tail", [`${c}.0`, "secret.txt"]);
    expect(r).toEqual({ code: 1, stdout: "", stderr: "Failed to peek at file from starter: File secret.txt requested but not authorized to be sent.\n" });
    r = await run("condor_tail", ["-no-stdout", `${c}.0`, "ok.txt"]);
    expect(r.code).toBe(0);
    r = await run("condor_tail", ["-maxb", "7", `${c}.0`]);
    expect(r.code).toBe(1);
    r = await run("condor_tail", ["-f", `${c}.0`], { timeoutMs: 1500, env: { MINICONDOR_TAIL_POLL_MS: "200" } });
    expect(r.code).toBe(143);
    expect(r.stdout.split("\n").filter((l) => l.startsWith("tick")).length).toBeGreaterThan(3);
    await run("condor_rm", [`${c}.0`]);
    await waitDone(`${c}.0`);
    r = await run("condor_tail", [`${c}.0`]);
    expect(r).toEqual({ code: 1, stdout: "", stderr: `No such job: ${c}.0\n` });
    const h = await submit("executable = /bin/true\nhold = true\nqueue\n");
    r = await run("condor_tail", [`${h}.0`], { timeoutMs: 800 });
    expect(r).toEqual({ code: 143, stdout: "", stderr: "" });
    await run("condor_rm", [`${h}.0`]);
  }, 30_000);

  // The job ends (its starter, and with it the sandbox, gone) after condor_tail looked it up: the
  // peek finds no starter. Never a silent success (docs/htcondor.md#condor_tail: other failures print a message, exit
  // 1; tail.cpp: "Failed to peek at file from starter: <error>"). Staged here by deleting the sandbox
  // of a job the queue still shows running, the state condor_tail sees in that race.
  test("a sandbox gone between the lookup and the read: an error, exit 1, also with -f", async () => {
    const h = newHome();
    const o = { home: h };
    const c = await submit("executable = sleeper.sh\noutput = race.out\nshould_transfer_files = YES\nqueue\n", [], o);
    await waitQ(`${c}.0`, ["JobStatus"], "2", o);
    const scratch = await waitFor(
      () => {
        const dirs = fs.readdirSync(path.join(h, "execute")).map((d) => path.join(h, "execute", d, "scratch"));
        return dirs.find((d) => fs.existsSync(path.join(d, "_condor_stdout")));
      },
      5000,
      50,
    );
    expect((await run("condor_tail", [`${c}.0`], o)).code).toBe(0);
    fs.rmSync(scratch!, { recursive: true, force: true });
    expect(await qAf(`${c}.0`, ["JobStatus"], o)).toBe("2");
    const failed = { code: 1, stdout: "", stderr: "Failed to peek at file from starter: Failed to connect to starter\n" };
    expect(await run("condor_tail", [`${c}.0`], o)).toEqual(failed);
    expect(await run("condor_tail", ["-f", `${c}.0`], { ...o, timeoutMs: 3000 })).toEqual(failed);
    await run("condor_rm", [`${c}.0`], o);
  }, 20_000);
});

// ---------------------------------------------------------------------------------------------
describe("-spool and condor_transfer_data (docs/htcondor.md#condor_submit-options, docs/htcondor.md#condor_transfer_data, test/minicondor/fixtures/spool.txt)", () => {
  test("held with code 16, released, runs in the spool, stays with status 4 until transfer_data", async () => {
    // A home of its own: its schedd keeps a fetched job for a stage-out linger scaled by the load.
    const lingerMs = scaled(5000);
    const h = newHome({ stageOutLingerMs: lingerMs });
    const o = { home: h };
    const sd = path.join(work, "spooldir");
    writeFile("spool.sh", '#!/bin/bash\necho "spool job"\ncat input.txt\necho result > result.txt\necho err >&2\n', 0o755, sd);
    writeFile("input.txt", "input data\n", 0o644, sd);
    writeFile(
      "spool.sub",
      "executable = spool.sh\noutput = spool.$(Cluster).$(Process).out\nerror = spool.$(Cluster).$(Process).err\nlog = spool.log\ntransfer_input_files = input.txt\nshould_transfer_files = YES\nqueue\n",
      0o644,
      sd,
    );
    let r = await run("condor_submit", ["-spool", "-terse", "spool.sub"], { cwd: sd, home: h });
    expect(r.code).toBe(0);
    const c = Number(r.stdout.split(".")[0]);
    fs.writeFileSync(path.join(sd, "input.txt"), "changed after submit\n");
    const q = JSON.parse(
      (await run("condor_q", ["-json", `${c}.0`, "-attributes", "ClusterId,ProcId,JobStatus,HoldReason,HoldReasonCode,Iwd,LeaveJobInQueue"], o)).stdout,
    )[0];
    expect(q.JobStatus).toBe(5);
    expect(q.HoldReasonCode).toBe(16);
    expect(q.HoldReason).toBe("Spooling input data files");
    expect(q.Iwd).toBe(path.join(h, "spool", String(c), "0", `cluster${c}.proc0.subproc0`));
    expect(q.LeaveJobInQueue).toBe("/Expr(JobStatus == 4 && (time() - (CompletionDate ?: time())) < 864000 && (StageOutFinish ?: 0) < EnteredCurrentStatus)/");
    await waitQ(`${c}.0`, ["JobStatus"], "4", o);
    const done =
      JSON.parse((await run("condor_q", ["-json", `${c}.0`, "-attributes", "JobStatus,SUBMIT_Iwd,ExitCode,SpooledOutputFiles,StageOutFinish"], o)).stdout)[0];
    expect(done).toEqual({ ExitCode: 0, JobStatus: 4, SpooledOutputFiles: "result.txt", SUBMIT_Iwd: sd });
    expect(fs.existsSync(path.join(sd, `spool.${c}.0.out`))).toBe(false);
    const fetchedAt = Date.now();
    r = await run("condor_transfer_data", [`${c}.0`], o);
    expect(r).toEqual({ code: 0, stdout: "Fetching data files...\n", stderr: "" });
    expect(fs.readFileSync(path.join(sd, `spool.${c}.0.out`), "utf8")).toBe("spool job\ninput data\n");
    expect(fs.readFileSync(path.join(sd, `spool.${c}.0.err`), "utf8")).toBe("err\n");
    expect(fs.readFileSync(path.join(sd, "result.txt"), "utf8")).toBe("result\n");
    // test/minicondor/fixtures/spool.txt q-after-transfer: still in the queue, status 4, StageOutFinish set,
    // LeaveJobInQueue false; and it leaves the queue a few seconds later (stageOutLingerMs, counted
    // from StageOutFinish: whole seconds, so from a second before the fetch at most). An answer
    // that came within that time must show the job; one slower than the linger says nothing of it.
    const inQueue = async (attrs: string[]) => {
      const out = await qAf(`${c}.0`, attrs, o);
      return Date.now() - fetchedAt < lingerMs - 1000 ? out : undefined;
    };
    const first = await inQueue(["ClusterId", "ProcId", "JobStatus", "StageOutFinish", "LeaveJobInQueue"]);
    if (first !== undefined) expect(first).toMatch(new RegExp(`^${c} 0 4 \\d+ false$`));
    await Bun.sleep(1000);
    const later = await inQueue(["JobStatus"]);
    if (later !== undefined) expect(later).toBe("4");
    expect(await waitDone(`${c}.0`, { ...o, timeoutMs: lingerMs + 10_000 })).toBe("4");
    expect(Date.now() - fetchedAt).toBeGreaterThanOrEqual(lingerMs - 1000);
    expect((await histAf(`${c}.0`, ["StageOutFinish"], o)).trim()).toMatch(/^\d+$/);
    expect(fs.existsSync(path.join(h, "spool", String(c), "0"))).toBe(false);
    r = await run("condor_transfer_data", ["999999.0"], o);
    expect(r).toEqual({ code: 0, stdout: "Fetching data files...\n", stderr: "" });
  }, scaled(30_000));
  test(
    "remaps of a spooled job apply at condor_transfer_data, not at exit (docs/htcondor.md#condor_submit-options, docs/htcondor.md#condor_transfer_data)",
    async () => {
      const sd = path.join(work, "spoolremap");
      writeFile("remap.sh", "#!/bin/bash\necho out-line\necho err-line >&2\necho data > result.txt\n", 0o755, sd);
      fs.mkdirSync(path.join(sd, "logs"), { recursive: true });
      writeFile(
        "remap.sub",
        "executable = remap.sh\noutput = logs/job.out\nerror = logs/job.err\ntransfer_output_files = result.txt\n" +
          'transfer_output_remaps = "result.txt = renamed.txt"\nshould_transfer_files = YES\nqueue\n',
        0o644,
        sd,
      );
      let r = await run("condor_submit", ["-spool", "-terse", "remap.sub"], { cwd: sd });
      expect(r.code).toBe(0);
      const c = Number(r.stdout.split(".")[0]);
      const q = JSON.parse((await run("condor_q", ["-json", `${c}.0`, "-attributes", "Out,Err,TransferOutputRemaps,Iwd"])).stdout)[0];
      expect(q.Out).toBe("_condor_stdout");
      expect(q.Err).toBe("_condor_stderr");
      expect(q.TransferOutputRemaps).toContain(`_condor_stdout=${path.join(sd, "logs/job.out")}`);
      expect(q.TransferOutputRemaps).toContain(`_condor_stderr=${path.join(sd, "logs/job.err")}`);
      await waitQ(`${c}.0`, ["JobStatus"], "4");
      // everything is still in the spool, under its sandbox names
      expect(fs.readdirSync(path.join(sd, "logs"))).toEqual([]);
      expect(fs.existsSync(path.join(sd, "renamed.txt"))).toBe(false);
      expect(fs.existsSync(path.join(sd, "result.txt"))).toBe(false);
      expect(fs.readdirSync(q.Iwd).sort()).toEqual(expect.arrayContaining(["_condor_stderr", "_condor_stdout", "result.txt"]));
      r = await run("condor_transfer_data", [String(c)]);
      expect(r).toEqual({ code: 0, stdout: "Fetching data files...\n", stderr: "" });
      expect(fs.readFileSync(path.join(sd, "logs/job.out"), "utf8")).toBe("out-line\n");
      expect(fs.readFileSync(path.join(sd, "logs/job.err"), "utf8")).toBe("err-line\n");
      expect(fs.readFileSync(path.join(sd, "renamed.txt"), "utf8")).toBe("data\n");
      expect(fs.existsSync(path.join(sd, "result.txt"))).toBe(false);
    },
    20_000,
  );
});

// ---------------------------------------------------------------------------------------------
// docs/htcondor.md#submitting-many-pods-at-once
describe("many pods in one condor_submit (docs/htcondor.md#submitting-many-pods-at-once)", () => {
  const OBS = "docs/htcondor.md#submitting-many-pods-at-once";
  /** Three pod folders, each with its own job.sh, as the observed form uses them. */
  function podDirs(tag: string, script = '#!/bin/bash\necho "$(basename "$_CONDOR_JOB_IWD")" > result.txt\necho out-$1\n'): string[] {
    return [1, 2, 3].map((n) => {
      const d = path.join(work, `${tag}-p${n}`);
      writeFile("job.sh", script, 0o755, d);
      return d;
    });
  }
  const stepFile = (dirs: string[], extra = "", queue = `queue ${dirs.length}`) =>
    dirs.map((d, i) => `V_dir_${i} = ${d}\n`).join("") + extra +
    "initialdir = $(V_dir_$(Step))\nexecutable = $(V_dir_$(Step))/job.sh\noutput = job.out\nerror = job.err\nlog = job.log\n" +
    "should_transfer_files = YES\nwhen_to_transfer_output = ON_EXIT\n" + queue + "\n";

  test(`nested macros, $(Step) 0..N-1, $(Process)/$(Cluster) and their Id forms, an empty value is the default, QDate on every ad (${OBS})`, async () => {
    const dirs = podDirs("step");
    const before = Math.floor(Date.now() / 1000);
    const sub = stepFile(
      dirs,
      "V_uid_0 = uid-a\nV_uid_1 = uid-b\nV_uid_2 = uid-c\nV_cpus_0 = 1\nV_cpus_1 = 2\nV_cpus_2 =\n" +
        'request_cpus = $(V_cpus_$(Step))\nMY.InterLinkPodUID = "$(V_uid_$(Step))"\nMY.Names = "$(Cluster).$(Process) $(ClusterId).$(ProcId) $(Step)"\n' +
        "arguments = $(ProcId)\nhold = true\n",
    );
    const r = await run("condor_submit", ["-terse", writeFile("step.sub", sub)]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const m = /^(\d+)\.0 - \1\.2\n$/.exec(r.stdout);
    expect(m).not.toBeNull();
    const c = m![1]!;
    const after = Math.floor(Date.now() / 1000);
    const rows = (await run("condor_q", [c, "-af:j", "Iwd", "RequestCpus", "InterLinkPodUID", "Names", "Args", "Cmd"])).stdout;
    expect(rows).toBe(dirs.map((d, i) => `${c}.${i} ${d} ${[1, 2, 1][i]} uid-${"abc"[i]} ${c}.${i} ${c}.${i} ${i} ${i} ${d}/job.sh\n`).join(""));
    // the schedd's submit time, the same for every proc of the submit, in epoch seconds
    const qd = (await run("condor_q", [c, "-af", "QDate"])).stdout.trim().split("\n").map(Number);
    expect(qd.length).toBe(3);
    for (const t of qd) {
      expect(t).toBeGreaterThanOrEqual(before);
      expect(t).toBeLessThanOrEqual(after);
      expect(t).toBe(qd[0]!);
    }
    expect((await run("condor_rm", [c])).code).toBe(0);
    expect((await run("condor_history", [c, "-af", "QDate"])).stdout.trim().split("\n").map(Number)).toEqual(qd);
  }, 20_000);

  test(`a warning for every unused macro line, in the observed words, rc 0 (${OBS})`, async () => {
    const r = await run("condor_submit", [
      "-terse",
      writeFile(
        "unused.sub",
        'V_uid_0 = uid-n1\nV_uid_1 = uid-n2\nV_uid_2 = uid-n3\nexecutable = /bin/true\nhold = true\nMY.U = "$(V_uid_$(Step))"\nqueue 1\n',
      ),
    ]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(
      "WARNING: the line 'V_uid_1 = uid-n2' was unused by condor_submit. Is it a typo?\n" +
        "WARNING: the line 'V_uid_2 = uid-n3' was unused by condor_submit. Is it a typo?\n",
    );
    await run("condor_rm", [r.stdout.split(".")[0]!]);
  }, 30_000);

  test(`one bad job fails the whole submit: its error, rc 1, stdout empty, nothing queued (${OBS})`, async () => {
    const dirs = podDirs("bad");
    const bad = path.join(work, "nonexistent");
    const sub = `V_dir_0 = ${dirs[0]}\nV_dir_1 = ${bad}\nbatch_name = bad-batch\ninitialdir = $(V_dir_$(Step))\nexecutable = /bin/true\nqueue 2\n`;
    const f = writeFile("bad-batch.sub", sub);
    let r = await run("condor_submit", ["-terse", f]);
    expect(r).toEqual({ code: 1, stdout: "", stderr: `ERROR: No such directory: ${bad}\n` });
    // without -terse: the banner and a dot for the job that was sent before the bad one (submit.cpp queue_item)
    r = await run("condor_submit", [f]);
    expect(r).toEqual({ code: 1, stdout: "Submitting job(s).", stderr: `ERROR: No such directory: ${bad}\n` });
    expect((await run("condor_q", ["-constraint", 'JobBatchName == "bad-batch"', "-af", "ClusterId"])).stdout).toBe("");
    expect((await run("condor_history", ["-constraint", 'JobBatchName == "bad-batch"', "-af", "ClusterId"])).stdout).toBe("");
  }, 30_000);

  test(`several queue statements: the deprecation warning, one cluster per block, values carried over (${OBS})`, async () => {
    const sub = 'executable = /bin/true\nhold = true\nrequest_cpus = 2\nMY.InterLinkPodUID = "u1"\nqueue 1\n' +
      'MY.InterLinkPodUID = "u2"\nqueue 1\nrequest_cpus = 1\nqueue 2\n';
    const r = await run("condor_submit", ["-terse", writeFile("multiq.sub", sub)]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(
      "\nWarning: Use of multiple queue statements in a single submit file is deprecated.\n" +
        "         This functionality will be removed in the 25.x feature series. To see\n" +
        "         how multiple queue statements can be converted into one visit:\n" +
        "https://htcondor.readthedocs.io/en/latest/auto-redirect.html?category=example&tag=convert-multi-queue-statements\n",
    );
    const m = /^(\d+)\.0 - \1\.0\n(\d+)\.0 - \2\.0\n(\d+)\.0 - \3\.1\n$/.exec(r.stdout);
    expect(m).not.toBeNull();
    const [a, b, c] = [Number(m![1]), Number(m![2]), Number(m![3])];
    expect([b - a, c - b]).toEqual([1, 1]);
    const rows = (await run("condor_q", [String(a), String(b), String(c), "-af:j", "RequestCpus", "InterLinkPodUID", "TotalSubmitProcs"])).stdout;
    expect(rows).toBe(`${a}.0 2 u1 1\n${b}.0 2 u2 1\n${c}.0 1 u2 2\n${c}.1 1 u2 2\n`);
    // without -terse: a dot per job, then one line per cluster
    const n = await run("condor_submit", [path.join(work, "multiq.sub")]);
    expect(n.stdout).toMatch(
      /^Submitting job\(s\)\.\.\.\.\n1 job\(s\) submitted to cluster (\d+)\.\n1 job\(s\) submitted to cluster \d+\.\n2 job\(s\) submitted to cluster \d+\.\n$/,
    );
    expect(n.stderr).toMatch(/\nTo monitor your job\(s\), run: condor_watch_q -clusters \d+ \d+ \d+\n$/);
    await run("condor_rm", [String(a), String(b), String(c), ...n.stdout.match(/cluster (\d+)/g)!.map((x) => x.slice(8))]);
  }, 30_000);

  test(`several submit files on one command line: only the last one is submitted (${OBS})`, async () => {
    const f1 = writeFile("first.sub", "executable = /bin/true\nbatch_name = first-file\nhold = true\nqueue 1\n");
    const f2 = writeFile("second.sub", "executable = /bin/true\nbatch_name = second-file\nhold = true\nqueue 1\n");
    const r = await run("condor_submit", ["-terse", f1, f2]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^(\d+)\.0 - \1\.0\n$/);
    expect(await qAf(r.stdout.split(".")[0]!, ["JobBatchName"])).toBe("second-file");
    expect((await run("condor_q", ["-constraint", 'JobBatchName == "first-file"', "-af", "ClusterId"])).stdout).toBe("");
    await run("condor_rm", [r.stdout.split(".")[0]!]);
  }, 30_000);

  test(`an empty value leaks job 0's value for some commands and not for others (${OBS}, the leak table)`, async () => {
    const sub = `executable = /bin/true
hold = true
V_x_0 = "set"
V_x_1 =
MY.X = $(V_x_$(Step))
V_req_0 = (TARGET.Cpus >= 1)
V_req_1 =
requirements = $(V_req_$(Step))
accounting_group_user = u
V_ag_0 = group_a
V_ag_1 =
accounting_group = $(V_ag_$(Step))
V_tif_0 = input.txt
V_tif_1 =
transfer_input_files = $(V_tif_$(Step))
V_ajd_0 = 3600
V_ajd_1 =
allowed_job_duration = $(V_ajd_$(Step))
V_cpus_0 = 2
V_cpus_1 =
request_cpus = $(V_cpus_$(Step))
queue 2
`;
    const c = await submit(sub);
    const ads = JSON.parse(
      (await run("condor_q", [
        String(c),
        "-json",
        "-attributes",
        "ProcId,X,Requirements,AcctGroup,AccountingGroup,TransferInput,AllowedJobDuration,RequestCpus",
      ])).stdout,
    );
    const [j0, j1] = ads as Record<string, unknown>[];
    expect(j0!.X).toBe("set");
    expect(j0!.AccountingGroup).toBe("group_a.u");
    expect(j0!.RequestCpus).toBe(2);
    expect(String(j0!.Requirements)).toStartWith("/Expr(((TARGET.Cpus >= 1)) && ");
    // job 1: X = undefined; default requirements; AcctGroup, TransferInput, AllowedJobDuration from job 0; RequestCpus 1
    expect(j1!.X).toBeNull();
    expect(String(j1!.Requirements)).toStartWith('/Expr((TARGET.Arch == "X86_64")');
    expect(j1!.AcctGroup).toBe("group_a");
    expect(j1!.AccountingGroup).toBe("u");
    expect(j1!.TransferInput).toBe("input.txt");
    expect(j1!.AllowedJobDuration).toBe(3600);
    expect(j1!.RequestCpus).toBe(1);
    expect((await run("condor_q", [`${c}.1`, "-l"])).stdout).toMatch(/^X = undefined$/m);
    await run("condor_rm", [String(c)]);
  }, 30_000);

  test(`-spool with a batch: one spool folder per job, one condor_transfer_data for the cluster; hold = true refused (${OBS})`, async () => {
    const dirs = podDirs("spoolb");
    let r = await run("condor_submit", ["-terse", "-spool", writeFile("spoolb.sub", stepFile(dirs, "arguments = $(Step)\n"))]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^(\d+)\.0 - \1\.2\n$/);
    const c = r.stdout.split(".")[0]!;
    const iwds = (await run("condor_q", [c, "-af", "Iwd"])).stdout.trim().split("\n");
    expect(iwds).toEqual([0, 1, 2].map((p) => path.join(home, "spool", c, String(p), `cluster${c}.proc${p}.subproc0`)));
    await waitFor(async () => (await run("condor_q", [c, "-af", "JobStatus"])).stdout === "4\n4\n4\n", 20_000, 200);
    for (const d of dirs) expect(fs.existsSync(path.join(d, "result.txt"))).toBe(false);
    r = await run("condor_transfer_data", [c]);
    expect(r).toEqual({ code: 0, stdout: "Fetching data files...\n", stderr: "" });
    dirs.forEach((d, i) => {
      // the job's Iwd was its own spool folder
      expect(fs.readFileSync(path.join(d, "result.txt"), "utf8")).toBe(`cluster${c}.proc${i}.subproc0\n`);
      expect(fs.readFileSync(path.join(d, "job.out"), "utf8")).toBe(`out-${i}\n`);
    });
    r = await run("condor_submit", ["-terse", "-spool", writeFile("spoolhold.sub", stepFile(dirs, "hold = true\n"))]);
    expect(r).toEqual({ code: 1, stdout: "", stderr: "ERROR: Cannot set hold to 'true' when using -remote or -spool\n" });
  }, 40_000);

  test(
    `condor_rm, condor_history and condor_q with several job ids (${OBS}; docs/htcondor.md#which-jobs-condor_q-shows, docs/htcondor.md#condor_history, docs/htcondor.md#job-ids-one-line-per-id)`,
    async () => {
      const c = await submit('executable = /bin/true\nhold = true\nMY.InterLinkPodUID = "uid-$(Process)"\nqueue 3\n');
      const d = await submit("executable = /bin/true\nhold = true\nqueue 1\n");
      // condor_q: ids and cluster ids together, in job-id order
      expect((await run("condor_q", [`${c}.2`, `${c}.0`, String(d), "-af:j", "JobStatus"])).stdout).toBe(`${c}.0 5\n${c}.2 5\n${d}.0 5\n`);
      expect((await run("condor_q", [`${c}.2`, `${c}.0`, String(d), "-constraint", "ProcId == 0", "-af:j", "JobStatus"])).stdout).toBe(`${c}.0 5\n${d}.0 5\n`);
      let r = await run("condor_rm", [`${c}.0`, `${c}.2`]);
      expect(r).toEqual({ code: 0, stdout: `Job ${c}.0 marked for removal\nJob ${c}.2 marked for removal\n`, stderr: "" });
      // one id already gone: its own line on stderr, the others act, rc 0
      r = await run("condor_rm", [`${c}.1`, `${c}.0`, `${d}.0`]);
      expect(r).toEqual({ code: 0, stdout: `Job ${c}.1 marked for removal\nJob ${d}.0 marked for removal\n`, stderr: `Job ${c}.0 not found\n` });
      // every id gone: rc 1
      r = await run("condor_rm", [`${c}.1`, `${c}.0`]);
      expect(r).toEqual({ code: 1, stdout: "", stderr: `\nJob ${c}.1 not found\nJob ${c}.0 not found\n` });
      // condor_history: one line per job, newest first; also with -constraint and -limit
      expect((await run("condor_history", [`${c}.0`, `${c}.1`, `${c}.2`, "-af:j", "JobStatus", "InterLinkPodUID"])).stdout)
        .toBe(`${c}.1 3 uid-1\n${c}.2 3 uid-2\n${c}.0 3 uid-0\n`);
      expect((await run("condor_history", [`${c}.0`, `${c}.2`, "-af:j", "JobStatus", "InterLinkPodUID"])).stdout).toBe(`${c}.2 3 uid-2\n${c}.0 3 uid-0\n`);
      expect((await run("condor_history", [`${c}.0`, `${c}.1`, `${c}.2`, "-constraint", "ProcId != 1", "-limit", "2", "-af:j", "JobStatus"])).stdout)
        .toBe(`${c}.2 3\n${c}.0 3\n`);
      expect((await run("condor_history", [`${c}.0`, `${c}.1`, `${c}.2`, "-limit", "2", "-af:j", "JobStatus"])).stdout).toBe(`${c}.1 3\n${c}.2 3\n`);
    },
    30_000,
  );
});

// ---------------------------------------------------------------------------------------------
// docs/htcondor.md#submitting-many-pods-at-once (its end: a value ending in `\`)
describe("line continuation and the failures a pod's own submit values cause", () => {
  test("a value ending in \\ continues onto the next line: rank = 1 \\ + priority = 2 (docs/htcondor.md#submitting-many-pods-at-once)", async () => {
    const f = writeFile("cont.sub", "executable = /bin/true\nbatch_name = cont-test\nrank = 1 \\\npriority = 2\nqueue\n");
    let r = await run("condor_submit", ["-terse", f]);
    expect(r).toEqual({ code: 1, stdout: "", stderr: "ERROR: Parse error in expression: \n\tRank = 1 priority = 2\n\t\n" });
    expect((await run("condor_q", ["-constraint", 'JobBatchName == "cont-test"', "-af", "ClusterId"])).stdout).toBe("");
    // the continuation line loses its leading blanks; a comment line does not continue; one inside a continuation
    // keeps only its last character (src/condor_utils/config.cpp getline_implementation)
    const c = await submit(
      'executable = /bin/true\nhold = true\narguments = a \\\n      b\n# not continued \\\nMY.A = 1\nMY.B = "x\\\n# comment \\\ny"\nqueue\n',
    );
    expect(await qAf(`${c}.0`, ["Args", "A", "B"])).toBe("a b 1 xy");
    await run("condor_rm", [String(c)]);
    r = await run("condor_submit", ["-terse", writeFile("cont2.sub", 'executable = /bin/true\nhold = true\nMY.Z = "p\\\n# comment"\nqueue\n')]);
    expect(r.code).toBe(0);
    expect(await qAf(`${r.stdout.split(".")[0]}.0`, ["Z"])).toBe("p");
    await run("condor_rm", [r.stdout.split(".")[0]!]);
  }, 30_000);
  test(
    "a parse error in rank, requirements or MY.x: the expression, tab-indented, rc 1, nothing queued (src/condor_utils/submit_utils.cpp AssignJobExpr)",
    async () => {
      let r = await run("condor_submit", ["-terse", writeFile("badreq.sub", "executable = /bin/true\nrequirements = (Cpus >\nqueue\n")]);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).toStartWith('ERROR: Parse error in expression: \n\tRequirements = ((Cpus >) && (TARGET.Arch == "X86_64")');
      expect(r.stderr).toEndWith("\n\t\n");
      r = await run("condor_submit", ["-terse", writeFile("badmy.sub", 'executable = /bin/true\nMY.Foo = "open\nqueue\n')]);
      expect(r).toEqual({ code: 1, stdout: "", stderr: 'ERROR: Parse error in expression: \n\tFoo = "open\n\t\n' });
      r = await run("condor_submit", [writeFile("badrank.sub", "executable = /bin/true\nrank = 1 +\nqueue 2\n")]);
      expect(r).toEqual({ code: 1, stdout: "Submitting job(s)", stderr: "ERROR: Parse error in expression: \n\tRank = 1 +\n\t\n" });
    },
    30_000,
  );
  test("$ENV(NAME) is condor_submit's own environment; unset it is UNDEFINED, $ENV(NAME:default) its default (src/condor_utils/config.cpp)", async () => {
    const env = { MC_FIDELITY_ENV: "from-env", MC_FIDELITY_EXPR: "a b" };
    const c = Number(
      (await run("condor_submit", [
        "-terse",
        writeFile(
          "env.sub",
          'executable = /bin/true\nhold = true\nMY.E1 = "$ENV(MC_FIDELITY_ENV)"\nMY.E2 = "$ENV(MC_FIDELITY_UNSET)"\nMY.E3 = "$ENV(MC_FIDELITY_UNSET:dflt)"\nqueue\n',
        ),
      ], { env })).stdout.split(".")[0],
    );
    expect(await qAf(`${c}.0`, ["E1", "E2", "E3"])).toBe("from-env UNDEFINED dflt");
    await run("condor_rm", [String(c)]);
    const r = await run("condor_submit", ["-terse", writeFile("envrank.sub", "executable = /bin/true\nrank = $ENV(MC_FIDELITY_EXPR)\nqueue\n")], { env });
    expect(r).toEqual({ code: 1, stdout: "", stderr: "ERROR: Parse error in expression: \n\tRank = a b\n\t\n" });
  }, 30_000);
});

// ---------------------------------------------------------------------------------------------
// src/condor_utils/file_transfer.cpp ExpandFileTransferList / DoUpload; docs/man-pages/htcondor-jdl.rst transfer_output_files
describe("output transfer of symbolic links (file_transfer.cpp, htcondor-jdl.rst)", () => {
  const noLinks = (dir: string): string[] => {
    const links: string[] = [];
    const walk = (p: string) => {
      const st = fs.lstatSync(p);
      if (st.isSymbolicLink()) links.push(p);
      else if (st.isDirectory()) { for (const e of fs.readdirSync(p)) walk(path.join(p, e)); }
    };
    walk(dir);
    return links;
  };
  test("links to files come back as regular files with their target's content; dangling links are dropped; nothing comes back as a link", async () => {
    const d = path.join(work, "links1");
    const outside = writeFile("outside-secret.txt", "outside content\n", 0o640);
    writeFile(
      "job.sh",
      `#!/bin/bash
mkdir -p podstate/sub; echo a > podstate/a; echo b > podstate/sub/b
ln -s ${outside} podstate/tofile
ln -s a podstate/relative
ln -s /nonexistent/target podstate/dangling
ln -s ${outside} top
ln -s /nonexistent/target dangling_top
mkdir real; echo r > real/r; ln -s real linkdir
ln -s ${outside} auto_link
`,
      0o755,
      d,
    );
    writeFile(
      "links.sub",
      "executable = job.sh\nshould_transfer_files = YES\ntransfer_output_files = podstate, top, dangling_top, linkdir/\nqueue\n",
      0o644,
      d,
    );
    const r = await run("condor_submit", ["-terse", "links.sub"], { cwd: d });
    const c = r.stdout.split(".")[0]!;
    expect(await waitDone(`${c}.0`)).toBe("4");
    expect(noLinks(d).filter((p) => !p.endsWith("job.sh"))).toEqual([]);
    expect(fs.readFileSync(path.join(d, "podstate/tofile"), "utf8")).toBe("outside content\n");
    expect(fs.statSync(path.join(d, "podstate/tofile")).mode & 0o777).toBe(0o640);
    expect(fs.readFileSync(path.join(d, "podstate/relative"), "utf8")).toBe("a\n");
    expect(fs.readFileSync(path.join(d, "podstate/sub/b"), "utf8")).toBe("b\n");
    expect(fs.existsSync(path.join(d, "podstate/dangling"))).toBe(false);
    expect(fs.readFileSync(path.join(d, "top"), "utf8")).toBe("outside content\n");
    expect(fs.existsSync(path.join(d, "dangling_top"))).toBe(false);
    // a trailing slash follows a link to a directory and sends its contents
    expect(fs.readFileSync(path.join(d, "r"), "utf8")).toBe("r\n");
    expect(fs.existsSync(path.join(d, "linkdir"))).toBe(false);
    // not listed: auto transfer takes new top-level files (a link to a file, as its content), never directories
    const e = path.join(work, "links2");
    writeFile("job.sh", `#!/bin/bash\nmkdir real; echo r > real/r; ln -s real linkdir\nln -s ${outside} auto_link\nln -s /nonexistent/x dangling\n`, 0o755, e);
    writeFile("auto.sub", "executable = job.sh\nshould_transfer_files = YES\nqueue\n", 0o644, e);
    const c2 = (await run("condor_submit", ["-terse", "auto.sub"], { cwd: e })).stdout.split(".")[0]!;
    expect(await waitDone(`${c2}.0`)).toBe("4");
    expect(fs.readdirSync(e).sort()).toEqual(["auto.sub", "auto_link", "job.sh"]);
    expect(fs.lstatSync(path.join(e, "auto_link")).isFile()).toBe(true);
  }, 30_000);
  test("a link to a directory is not followed: an empty file in its place, the rest transferred, the job held with code 12, subcode 21", async () => {
    const d = path.join(work, "links3");
    writeFile("job.sh", "#!/bin/bash\nmkdir -p podstate; echo a > podstate/a; ln -s /tmp podstate/todir\nexit 7\n", 0o755, d);
    writeFile("links.sub", "executable = job.sh\nshould_transfer_files = YES\ntransfer_output_files = podstate\nlog = links.log\nqueue\n", 0o644, d);
    const c = (await run("condor_submit", ["-terse", "links.sub"], { cwd: d })).stdout.split(".")[0]!;
    await waitQ(`${c}.0`, ["JobStatus"], "5", { timeoutMs: 15_000 });
    const j =
      JSON.parse((await run("condor_q", [`${c}.0`, "-json", "-attributes", "JobStatus,HoldReasonCode,HoldReasonSubCode,HoldReason,ExitCode"])).stdout)[0];
    expect(j.HoldReason).toMatch(
      new RegExp(
        "^Transfer output files failure at execution point slot1_\\d+@\\S+ while sending files to access point \\S+\\. " +
          "Details: reading from file \\S+/execute/dir_\\d+/scratch/podstate/todir: \\(errno 21\\) Is a directory- Transfer of symlinks to directories is not supported\\.$",
      ),
    );
    // held, not completed: no exit code is recorded
    expect({ ...j, HoldReason: undefined }).toEqual({ JobStatus: 5, HoldReasonCode: 12, HoldReasonSubCode: 21, HoldReason: undefined });
    expect(fs.readFileSync(path.join(d, "podstate/a"), "utf8")).toBe("a\n");
    expect(fs.lstatSync(path.join(d, "podstate/todir")).isFile()).toBe(true);
    expect(fs.statSync(path.join(d, "podstate/todir")).size).toBe(0);
    expect(fs.readFileSync(path.join(d, "links.log"), "utf8")).toContain("Code 12 Subcode 21\n");
    // the same for a link to a directory named in the list
    writeFile("job2.sh", "#!/bin/bash\nln -s /tmp dirlink\n", 0o755, d);
    writeFile("links2.sub", "executable = job2.sh\nshould_transfer_files = YES\ntransfer_output_files = dirlink\nqueue\n", 0o644, d);
    const c2 = (await run("condor_submit", ["-terse", "links2.sub"], { cwd: d })).stdout.split(".")[0]!;
    await waitQ(`${c2}.0`, ["JobStatus", "HoldReasonCode", "HoldReasonSubCode"], "5 12 21", { timeoutMs: 15_000 });
    expect(fs.lstatSync(path.join(d, "dirlink")).isFile()).toBe(true);
    await run("condor_rm", [c, c2]);
  }, 40_000);
});

// ---------------------------------------------------------------------------------------------
// From here on, tests run side by side (sideBySide) where each has a home of its own and files of
// its own names in `work`: waiting for jobs and schedds, not computing, is what takes their time.
// The one test among them on the file's shared home ("a job held at start") is the only one there
// while they run. "no stray processes" runs alone, after them, and so does the slowafter test, which
// times a killed submit. Three at a time: each starts a schedd and jobs, on two cores. A test's
// timeout covers its wait for a turn (two others before it at most).
const SIDE_BY_SIDE = 3;
let inTurn = 0;
const turns: (() => void)[] = [];
function sideBySide(name: string, fn: () => Promise<void>, timeoutMs: number): void {
  test.concurrent(name, async () => {
    if (inTurn >= SIDE_BY_SIDE) await new Promise<void>((r) => turns.push(r));
    inTurn++;
    try {
      await fn();
    } finally {
      inTurn--;
      turns.shift()?.();
    }
  }, 3 * timeoutMs);
}

// src/condor_shadow.V6.1/remoteresource.cpp allowRemoteWriteAttributeAccess; src/condor_utils/param_info.in
describe("condor_chirp set_job_attr: what a job may rewrite in its own ad (docs/htcondor.md#condor_chirp; remoteresource.cpp, qmgmt.cpp)", () => {
  sideBySide("any attribute but the immutable ones (EACCES, error 13, rc 255); secure ones are ignored; JobStatus is accepted", async () => {
    const h = newHome({ delayedUpdateMs: 200, sharedFileSystem: true });
    writeFile(
      "imm.sh",
      `#!/bin/bash
chirp=$_CONDOR_BIN/../libexec/condor_chirp
for a in Owner ClusterId ProcId MyType TargetType JobUniverse User OsUser clusterid; do $chirp set_job_attr $a 99; echo "$a rc=$?"; done
$chirp set_job_attr InterLinkPodUID '"forged"'; echo "uid rc=$?"
$chirp set_job_attr InterLinkSidecarId '"other"'; echo "sid rc=$?"
$chirp set_job_attr Requirements false; echo "req rc=$?"
$chirp set_job_attr TotalSubmitProcs 99; echo "tsp rc=$?"
$chirp set_job_attr JobStatus 4; echo "js rc=$?"
touch chirped
while [ ! -e go ]; do sleep 0.1; done
exit 3
`,
      0o755,
    );
    const c = await submit(
      'executable = imm.sh\noutput = imm.out\n+WantIOProxy = true\nshould_transfer_files = NO\nMY.InterLinkPodUID = "pod-a"\nqueue\n',
      [],
      { home: h },
    );
    await waitFor(() => fs.existsSync(path.join(work, "chirped")), 15_000);
    expect(fs.readFileSync(path.join(work, "imm.out"), "utf8")).toBe(
      ["Owner", "ClusterId", "ProcId", "MyType", "TargetType", "JobUniverse", "User", "OsUser", "clusterid"].map((a) =>
        `\tError: 13 (Permission denied)\n${a} rc=255\n`
      ).join("") +
        "uid rc=0\nsid rc=0\nreq rc=0\ntsp rc=0\njs rc=0\n",
    );
    const j = JSON.parse(
      (await run("condor_q", [
        `${c}.0`,
        "-json",
        "-attributes",
        "ClusterId,ProcId,Owner,InterLinkPodUID,InterLinkSidecarId,Requirements,TotalSubmitProcs,JobStatus,LastJobStatus",
      ], { home: h })).stdout,
    )[0];
    expect(j).toEqual({
      ClusterId: c,
      ProcId: 0,
      Owner: expect.any(String),
      InterLinkPodUID: "forged",
      InterLinkSidecarId: "other",
      Requirements: false,
      TotalSubmitProcs: 1,
      JobStatus: 4,
      LastJobStatus: 2,
    });
    // the forged JobStatus is only in the ad: the job still runs, and its real end is recorded
    fs.writeFileSync(path.join(work, "go"), "");
    expect(await waitDone(`${c}.0`, { home: h })).toBe("4");
    expect(await histAf(`${c}.0`, ["ExitCode", "InterLinkPodUID"], { home: h })).toBe("3 forged\n");
    fs.rmSync(path.join(work, "go"));
    fs.rmSync(path.join(work, "chirped"));
  }, 30_000);
  sideBySide(
    "config immutableJobAttrs / protectedJobAttrs (IMMUTABLE_JOB_ATTRS, PROTECTED_JOB_ATTRS of the AP): refused like the system ones, without case; delayed updates dropped",
    async () => {
      const h = newHome({
        delayedUpdateMs: 200,
        sharedFileSystem: true,
        immutableJobAttrs: "InterLinkPodUID, InterLinkPodName",
        protectedJobAttrs: ["InterLinkSidecarId", "ChirpSecret"],
      });
      writeFile(
        "prot.sh",
        `#!/bin/bash
chirp=$_CONDOR_BIN/../libexec/condor_chirp
$chirp set_job_attr InterLinkPodUID '"forged"'; echo "uid rc=$?"
$chirp set_job_attr interlinkpodname '"forged"'; echo "name rc=$?"
$chirp set_job_attr INTERLINKSIDECARID '"other"'; echo "sid rc=$?"
$chirp set_job_attr InterLinkC0State '"running"'; echo "state rc=$?"
$chirp set_job_attr_delayed ChirpSecret 1; echo "d1 rc=$?"
$chirp set_job_attr_delayed ChirpOk 2; echo "d2 rc=$?"
`,
        0o755,
      );
      const c = await submit(
        "executable = prot.sh\noutput = prot.out\n+WantIOProxy = true\nshould_transfer_files = NO\n" +
          'MY.InterLinkPodUID = "pod-a"\nMY.InterLinkPodName = "a"\nMY.InterLinkSidecarId = "me"\nqueue\n',
        [],
        { home: h },
      );
      expect(await waitDone(`${c}.0`, { home: h })).toBe("4");
      expect(fs.readFileSync(path.join(work, "prot.out"), "utf8")).toBe(
        "\tError: 13 (Permission denied)\nuid rc=255\n\tError: 13 (Permission denied)\nname rc=255\n\tError: 13 (Permission denied)\nsid rc=255\nstate rc=0\nd1 rc=0\nd2 rc=0\n",
      );
      expect(await histAf(`${c}.0`, ["InterLinkPodUID", "InterLinkPodName", "InterLinkSidecarId", "InterLinkC0State", "ChirpSecret", "ChirpOk"], { home: h }))
        .toBe("pod-a a me running undefined 2\n");
    },
    30_000,
  );
});

// ---------------------------------------------------------------------------------------------
describe("fault injection (docs/htcondor.md#key-observations pool down)", () => {
  sideBySide("schedd down: every tool fails with the observed text; history still works", async () => {
    const h = newHome();
    const o = { home: h };
    setFaults(h, { scheddDown: true });
    writeFile("f.sub", "executable = /bin/true\nqueue\n");
    const expectDown = async (tool: string, args: string[], stderrStart: string) => {
      const r = await run(tool, args, o);
      expect(r.code).toBe(1);
      expect(r.stderr).toStartWith(stderrStart);
    };
    await expectDown("condor_q", [], "Error: Could not find the local condor_schedd");
    await expectDown("condor_status", [], "Error: communication error");
    await expectDown("condor_submit", ["-terse", "f.sub"], "\nERROR: Can't find address of local schedd\n");
    await expectDown("condor_rm", ["1.0"], "condor_rm: (null)\n");
    await expectDown("condor_hold", ["1.0"], "condor_hold: (null)\n");
    await expectDown("condor_transfer_data", ["1.0"], "condor_transfer_data: (null)\n");
    await expectDown("condor_tail", ["1.0"], "Can't find address of local schedd\n");
    expect(await run("condor_history", ["-json"], o)).toEqual({ code: 0, stdout: "[\n]\n", stderr: "" });
    // env var form
    const r = await runTool(h, "condor_q", [], { env: { MINICONDOR_SCHEDD_DOWN: "0" } });
    expect(r.code).toBe(1); // the file still says down
    setFaults(h, {});
    expect((await runTool(h, "condor_q", ["-af", "x"], { env: { MINICONDOR_SCHEDD_DOWN: "1" } })).code).toBe(1);
    expect((await run("condor_q", ["-af", "x"], o)).code).toBe(0);
  }, 30_000);
  sideBySide(
    "per-tool fail / hang / slow / warn; hold on start (docs/htcondor.md#condor_submit-exit-codes-and-errors, docs/htcondor.md#remote-schedds-and-condor_q-errors, docs/htcondor.md#hold-codes HoldReasonCode)",
    async () => {
      const h = newHome();
      const o = { home: h };
      setFaults(h, { tools: { condor_q: "fail", condor_history: "hang", condor_status: "slow:400", condor_rm: "warn" } });
      let r = await run("condor_q", [], o);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("-- Failed to fetch ads from:");
      r = await run("condor_history", [], { ...o, timeoutMs: 500 });
      expect(r.code).toBe(143);
      const t0 = Date.now();
      r = await run("condor_status", ["-af", "Name"], o);
      expect(r.code).toBe(0);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(400);
      r = await run("condor_rm", ["-all"], o);
      expect(r.code).toBe(0);
      expect(r.stderr).toStartWith("WARNING: ");
      // docs/htcondor.md#what-condor_submit-prints/docs/htcondor.md#condor_submit-exit-codes-and-errors: "Submitting
      // job(s)" (no newline) is out before the connection fails, unless -terse or stdin
      const failEnv = { ...ENV, MINICONDOR_FAULT_CONDOR_SUBMIT: "fail" };
      writeFile("f-fail.sub", "executable = /bin/true\nqueue\n");
      let fail = await runTool(h, "condor_submit", [path.join(work, "f-fail.sub")], { cwd: work, env: failEnv });
      expect(fail.code).toBe(1);
      expect(fail.stdout).toBe("Submitting job(s)");
      expect(fail.stderr).toStartWith("\nERROR: Failed to connect to local queue manager\n");
      fail = await runTool(h, "condor_submit", ["-terse", path.join(work, "f-fail.sub")], { cwd: work, env: failEnv });
      expect(fail.code).toBe(1);
      expect(fail.stdout).toBe("");
      fail = await runTool(h, "condor_submit", ["-"], { cwd: work, env: failEnv, stdin: "executable = /bin/true\nqueue\n" });
      expect(fail.code).toBe(1);
      expect(fail.stdout).toBe("");
      setFaults(h, {});
      const c = await submit(
        'executable = /bin/true\n+MiniCondorHoldCode = 34\n+MiniCondorHoldSubCode = 102\n+MiniCondorHoldReason = "Job has gone over memory limit of 128 megabytes."\nqueue\n',
        [],
        o,
      );
      await waitQ(`${c}.0`, ["JobStatus", "HoldReasonCode", "HoldReasonSubCode"], "5 34 102", o);
      setFaults(h, { holdOnStart: { code: 13, reason: "Transfer input files failure", constraint: "ProcId == 1" } });
      const d = await submit("executable = /bin/true\nqueue 2\n", [], o);
      await waitQ(`${d}.1`, ["JobStatus", "HoldReasonCode"], "5 13", o);
      expect(await waitDone(`${d}.0`, o)).toBe("4");
      setFaults(h, {});
    },
    30_000,
  );
});

describe("condor_submit slowafter (a submit killed by its caller's timeout after the commit)", () => {
  test("the job is queued before the sleep; killed during it, nothing is printed; otherwise the normal output follows", async () => {
    const h = newHome();
    const o = { home: h };
    writeFile("slow.sub", "executable = sleeper.sh\nshould_transfer_files = YES\nqueue\n");
    const env = { ...ENV, MINICONDOR_FAULT_CONDOR_SUBMIT: "slowafter:5000" };
    const t0 = Date.now();
    const killed = await runTool(h, "condor_submit", ["-terse", "-batch-name", "slow-killed", path.join(work, "slow.sub")], {
      cwd: work,
      env,
      timeoutMs: 1500,
    });
    expect(Date.now() - t0).toBeLessThan(4500);
    expect(killed).toEqual({ code: 143, stdout: "", stderr: "" });
    // the schedd has it and runs it, though its submitter never said so
    const ids = (await run("condor_q", ["-constraint", 'JobBatchName == "slow-killed"', "-af", "ClusterId"], o)).stdout.trim().split("\n");
    expect(ids).toHaveLength(1);
    await waitQ(`${ids[0]}.0`, ["JobStatus"], "2", o);
    const log = fs.readFileSync(path.join(h, "calls.log"), "utf8");
    expect(log).toMatch(/ condor_submit \[.*"slow-killed".*\] \d+ 143\n/);
    // not killed: the usual output, after the sleep
    const t1 = Date.now();
    const r = await runTool(h, "condor_submit", ["-terse", "-batch-name", "slow-done", path.join(work, "slow.sub")], {
      cwd: work,
      env: { ...ENV, MINICONDOR_FAULT_CONDOR_SUBMIT: "slowafter:800" },
    });
    expect(Date.now() - t1).toBeGreaterThanOrEqual(800);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^(\d+)\.0 - \1\.0\n$/);
    expect(await qAf(r.stdout.split(".")[0]!, ["JobBatchName"], o)).toBe("slow-done");
    await run("condor_rm", ["-all"], o);
  }, 20_000);
});

describe("faults reach the jobs they were given for", () => {
  sideBySide(
    "a job held at start never ran: no JobStartDate, JobRunCount, NumShadowStarts, FirstJobMatchDate (docs/htcondor.md#job-status-and-job-attributes)",
    async () => {
      const c = await submit(
        'executable = /bin/true\n+MiniCondorHoldCode = 34\n+MiniCondorHoldSubCode = 102\n+MiniCondorHoldReason = "Job has gone over memory limit"\nqueue\n',
      );
      await waitQ(`${c}.0`, ["JobStatus", "HoldReasonCode"], "5 34");
      const j = JSON.parse((await run("condor_q", ["-json", `${c}.0`])).stdout)[0];
      for (const a of ["JobStartDate", "JobRunCount", "NumShadowStarts", "FirstJobMatchDate", "JobCurrentStartDate", "RemoteHost", "LastRemoteHost"]) {
        expect(j[a]).toBeUndefined();
      }
      expect(j.NumJobStarts).toBe(0);
      expect(j.HoldReason).toBe("Job has gone over memory limit");
      await run("condor_rm", [String(c)]);
    },
    30_000,
  );
  sideBySide(
    "MINICONDOR_HOLD_ON_START given to condor_submit holds its jobs, even on a schedd already running (docs/htcondor.md#hold-codes HoldReasonCode)",
    async () => {
      const h = newHome();
      const o = { home: h };
      const busy = await submit("executable = sleeper.sh\nshould_transfer_files = YES\nqueue\n", [], o);
      await waitQ(`${busy}.0`, ["JobStatus"], "2", o); // the schedd is up, started without the variable
      writeFile("hos.sub", "executable = /bin/true\nqueue 2\n");
      const r = await runTool(h, "condor_submit", ["-terse", path.join(work, "hos.sub")], {
        cwd: work,
        env: { ...ENV, MINICONDOR_HOLD_ON_START: "34:Job has gone over memory limit of 128 megabytes." },
      });
      expect(r.code).toBe(0);
      const c = Number(r.stdout.split(".")[0]);
      await waitQ(`${c}.1`, ["JobStatus", "HoldReasonCode", "HoldReason"], "5 34 Job has gone over memory limit of 128 megabytes.", o);
      expect(await qAf(`${c}.0`, ["JobStatus"], o)).toBe("5");
      // the fault is the job's, not the ad's: nothing of it shows in condor_q
      expect(Object.keys(JSON.parse((await run("condor_q", ["-json", `${c}.0`], o)).stdout)[0]).filter((k) => /minicondor/i.test(k))).toEqual([]);
      // and it does not leak to jobs submitted without it
      const plain = await submit("executable = /bin/true\nqueue\n", [], o);
      expect(await waitDone(`${plain}.0`, o)).toBe("4");
      await run("condor_rm", ["-all"], o);
    },
    20_000,
  );
});

describe("hung tools do not outlive their caller (no stray processes: test/minicondor/README.md#fault-injection)", () => {
  sideBySide("a hang exits when its caller dies or its home goes; cleanup kills tools of the home", async () => {
    const h = newHome();
    const env = { ...process.env, MINICONDOR_HOME: h, MINICONDOR_FAULT_CONDOR_RM: "hang" } as Record<string, string>;
    // an orphan: its caller (bash) is killed, as a sidecar killed with -9 would be
    const parent = Bun.spawn(["bash", "-c", `${toolPath("condor_rm")} 1.0 & echo $!; sleep 60`], { env, stdout: "pipe", stderr: "ignore" });
    const reader = parent.stdout.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    const orphan = Number(first.trim());
    await waitFor(() => pidAlive(orphan) && fs.readFileSync(`/proc/${orphan}/cmdline`, "utf8").includes("condor_rm"), 5000, 50);
    parent.kill("SIGKILL");
    await parent.exited;
    await waitFor(() => !pidAlive(orphan), 5000, 50);
    // its home deleted under it
    const h2 = newHome();
    const hung = Bun.spawn([toolPath("condor_rm"), "1.0"], { env: { ...env, MINICONDOR_HOME: h2 }, stdout: "ignore", stderr: "ignore" });
    await waitFor(() => homePids(h2).includes(hung.pid), 5000, 50);
    fs.rmSync(h2, { recursive: true, force: true });
    expect(await hung.exited).toBe(143);
    // a schedd whose home is deleted stops, and takes its jobs with it
    const h4 = newHome();
    const j = await submit("executable = sleeper.sh\nshould_transfer_files = YES\nqueue\n", [], { home: h4 });
    await waitQ(`${j}.0`, ["JobStatus"], "2", { home: h4 });
    // JobStatus 2 is set when the job is matched, a moment before its process exists
    const pids = await waitFor(
      () => {
        const p = homePids(h4);
        return p.length > 1 ? p : undefined;
      },
      5000,
      50,
    );
    fs.rmSync(h4, { recursive: true, force: true });
    await waitFor(() => pids!.every((p) => !pidAlive(p)), 5000, 50);
    // cleanup() finds a hung tool by its MINICONDOR_HOME
    const h3 = newHome();
    const held = Bun.spawn([toolPath("condor_q")], {
      env: { ...env, MINICONDOR_HOME: h3, MINICONDOR_FAULT_CONDOR_Q: "hang" },
      stdout: "ignore",
      stderr: "ignore",
    });
    await waitFor(() => homePids(h3).includes(held.pid), 5000, 50);
    cleanup(h3);
    await held.exited;
    expect(homePids(h3)).toEqual([]);
  }, 20_000);

  sideBySide("gate:<name> holds a call until the file exists in the home, then it answers as usual", async () => {
    const h = newHome();
    let done = false;
    const q = run("condor_q", ["-af", "ClusterId"], { home: h, env: { MINICONDOR_FAULT_CONDOR_Q: "gate:go" } }).finally(() => (done = true));
    await waitFor(() => homePids(h).length > 0, 15_000, 50);
    // A whole call without the fault, start to end, while the held one waits.
    expect(await run("condor_q", ["-af", "ClusterId"], { home: h })).toEqual({ code: 0, stdout: "", stderr: "" });
    expect(done).toBe(false);
    fs.writeFileSync(path.join(h, "go"), "");
    expect(await q).toEqual({ code: 0, stdout: "", stderr: "" });
  }, 30_000);
});

// ---------------------------------------------------------------------------------------------
// The 200-job load test is in test/load/minicondor.test.ts (npm run test:load).
describe("cleanliness: no stray processes", () => {
  test("no stray processes: jobs gone, schedd exits when idle", async () => {
    for (const h of homes.filter((x) => fs.existsSync(path.join(x, "state.db")))) {
      await run("condor_rm", ["-all"], { home: h });
    }
    await waitFor(() => homes.every((h) => pidsWithEnv(`_CONDOR_SCRATCH_DIR=${path.join(h, "execute")}`).length === 0), 15_000);
    await waitFor(() => homes.every((h) => homePids(h).length === 0), 15_000);
    // no tool either: nothing at all runs with one of these homes
    expect(homes.flatMap((h) => pidsWithEnvEntry(`MINICONDOR_HOME=${h}`))).toEqual([]);
  }, 35_000);
});

// ---------------------------------------------------------------------------------------------
import { readEventLog } from "../../src/eventlog/index.ts";
// The job event log as the schedd and the shadow write it (docs/htcondor.md#the-job-event-log), read back with
// the sidecar's own reader; condor_vacate_job (src/condor_rm.V6/rm.cpp, schedd.cpp abort_job_myself).
describe("the job event log (docs/htcondor.md#the-events-as-written, docs/htcondor.md#condor_vacate_job)", () => {
  const readLog = (file: string) =>
    readEventLog(new Uint8Array(fs.readFileSync(file)), 0, { year: new Date().getFullYear(), localOffsetMinutes: -new Date().getTimezoneOffset() });
  const blocks = (file: string) => fs.readFileSync(file, "utf8").split(/(?<=\n\.\.\.\n)/);
  const block = (file: string, type: string, c: number) => blocks(file).filter((b) => b.startsWith(`${type} (${String(c).padStart(3, "0")}.000.000) `));

  sideBySide("submit, execute, 033 set and changed, hold, release, vacate, evict, terminate, abort: one shared log", async () => {
    const h = newHome({ sharedFileSystem: false });
    const o = { home: h };
    const d = fs.mkdtempSync(path.join(work, "evlog-"));
    const go = path.join(d, "go");
    writeFile(
      "state.sh",
      `#!/bin/bash
chirp=$_CONDOR_BIN/../libexec/condor_chirp
$chirp set_job_attr InterLinkTestState '"one"'
$chirp set_job_attr InterLinkTestState '"two"'
while [ ! -e "$1" ]; do sleep 0.1; done
exit 3
`,
      0o755,
      d,
    );
    const common = "log = ev.log\nshould_transfer_files = YES\n";
    const a = await submit(`executable = state.sh\narguments = ${go}\n+WantIOProxy = true\n${common}queue\n`, [], { ...o, cwd: d });
    const b = await submit(`executable = ${path.join(work, "sleeper.sh")}\n${common}queue\n`, [], { ...o, cwd: d });
    const log = path.join(d, "ev.log");
    await waitQ(`${a}.0`, ["JobStatus", "InterLinkTestState"], "2 two", o);
    await waitQ(`${b}.0`, ["JobStatus"], "2", o);

    // condor_vacate_job: a running job goes back to idle and runs again (rm.cpp: "vacated")
    const v = await run("condor_vacate_job", [`${a}.0`], o);
    expect([v.stdout, v.stderr, v.code]).toEqual([`Job ${a}.0 vacated\n`, "", 0]);
    await waitFor(() => block(log, "004", a).length === 1, 15_000);
    await waitFor(() => block(log, "033", a).length === 4, 15_000);
    expect(await qAf(`${a}.0`, ["JobStatus", "VacateReason", "VacateReasonCode", "NumJobStarts"], o)).toBe("2 Job vacated by schedd 1022 2");

    // hold, a vacate of a job that is not running, release, remove
    expect((await run("condor_hold", [`${b}.0`], o)).code).toBe(0);
    const nv = await run("condor_vacate_job", [`${b}.0`], o);
    expect([nv.stdout, nv.stderr, nv.code]).toEqual(["", `\nJob ${b}.0 not running to be vacated\n`, 1]);
    await waitFor(async () => !(await run("condor_status", ["-af", "JobId"], o)).stdout.includes(`${b}.0`), 15_000);
    expect((await run("condor_release", [`${b}.0`], o)).code).toBe(0);
    await waitQ(`${b}.0`, ["JobStatus"], "2", o);
    expect((await run("condor_rm", [`${b}.0`], o)).code).toBe(0);
    fs.writeFileSync(go, "");
    await waitDone(`${a}.0`, o);
    await waitDone(`${b}.0`, o);
    await waitFor(() => block(log, "009", b).length === 1, 15_000);

    const r = readLog(log);
    expect([r.format, r.malformed, r.unknown, r.pendingBytes, r.offset]).toEqual(["classic", 0, 0, 0, fs.statSync(log).size]);
    const seq = (c: number) => r.events.filter((e) => e.cluster === c).map((e) => e.type);
    expect(seq(a)).toEqual([0, 1, 33, 33, 4, 1, 33, 33, 5]);
    expect(seq(b)).toEqual([0, 1, 12, 13, 1, 9]);
    expect(r.events.find((e) => e.type === 5)).toMatchObject({ cluster: a, proc: 0, exitCode: 3 });
    expect(r.events.filter((e) => e.type === 33).map((e) => e.attribute)).toEqual(Array(4).fill("InterLinkTestState"));
    for (const e of r.events) expect(Math.abs(e.time - Date.now() / 1000)).toBeLessThan(600);

    // byte for byte where the sidecar reads: the header (ISO date, local time), the first lines, 005's exit line
    const header = /^\d{3} \(\d{3,}\.\d{3}\.000\) \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S/;
    for (const bl of blocks(log)) expect(bl).toMatch(header);
    const first = (t: string, c: number) => block(log, t, c).map((x) => x.split("\n")[0]!.slice(x.indexOf(") ") + 22));
    expect(first("033", a)).toEqual([
      'Setting job attribute InterLinkTestState to "one"',
      'Changing job attribute InterLinkTestState from "one" to "two"',
      'Changing job attribute InterLinkTestState from "two" to "one"',
      'Changing job attribute InterLinkTestState from "one" to "two"',
    ]);
    expect(first("000", a)[0]).toMatch(/^Job submitted from host: <127\.0\.0\.1:\d+\?.*>$/);
    expect(first("001", a)[0]).toMatch(/^Job executing on host: <127\.0\.0\.1:\d+\?.*>$/);
    const evicted = block(log, "004", a)[0]!;
    expect(evicted.slice(evicted.indexOf(") ") + 22)).toStartWith(
      "Job was evicted. Code 1022 Subcode 0\n\t(0) CPU times\n" +
        "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n" +
        "\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n\tReason: Job vacated by schedd\n" +
        "\tPartitionable Resources :    Usage  Request Allocated \n",
    );
    expect(evicted).toEndWith(" \n...\n");
    expect(block(log, "005", a)[0]!.split("\n")[1]).toBe("\t(1) Normal termination (return value 3)");
  }, 90_000);

  sideBySide("many jobs, one file: every event whole; condor_vacate_job -fast of a cluster; 033 only for set_job_attr", async () => {
    const h = newHome({ delayedUpdateMs: 200 });
    const o = { home: h };
    const d = fs.mkdtempSync(path.join(work, "evlog-"));
    writeFile(
      "quick.sh",
      `#!/bin/bash
$_CONDOR_BIN/../libexec/condor_chirp set_job_attr_delayed ChirpX 1
$_CONDOR_BIN/../libexec/condor_chirp set_job_attr InterLinkP$2 '"p"'
exit $2
`,
      0o755,
      d,
    );
    const sub = "log = shared.log\nshould_transfer_files = YES\n+WantIOProxy = true\n";
    const q = await submit(`executable = quick.sh\narguments = x $(Process)\n${sub}queue 12\n`, [], { ...o, cwd: d });
    const s2 = await submit(`executable = ${path.join(work, "sleeper.sh")}\n${sub}queue 2\n`, [], { ...o, cwd: d });
    await waitQ(String(s2), ["JobStatus"], "2\n2", o);
    const v = await run("condor_vacate_job", ["-fast", String(s2)], o);
    expect([v.stdout, v.stderr, v.code]).toEqual([`All jobs in cluster ${s2} have been fast-vacated\n`, "", 0]);
    const log = path.join(d, "shared.log");
    const count = (t: number) => readLog(log).events.filter((e) => e.cluster === s2 && e.type === t).length;
    await waitFor(() => count(4) === 2, 15_000);
    // Running again, as the log says it: the shadow writes 004 before the schedd sets the job idle
    // (docs/htcondor.md#who-writes-an-event-and-when), so JobStatus 2 right after it is the old run.
    await waitFor(() => count(1) === 4, 15_000);
    expect((await run("condor_rm", [String(s2)], o)).code).toBe(0);
    await waitFor(async () => (await run("condor_q", ["-af", "JobId"], o)).stdout === "", 20_000);
    await waitFor(() => count(9) === 2, 15_000);

    const r = readLog(log);
    expect([r.format, r.malformed, r.unknown, r.pendingBytes]).toEqual(["classic", 0, 0, 0]);
    for (let p = 0; p < 12; p++) {
      const mine = r.events.filter((e) => e.cluster === q && e.proc === p);
      expect(mine.map((e) => e.type)).toEqual([0, 1, 33, 5]);
      expect(mine[2]!.attribute).toBe(`InterLinkP${p}`);
      expect(mine[3]!.exitCode).toBe(p);
    }
    for (const p of [0, 1]) expect(r.events.filter((e) => e.cluster === s2 && e.proc === p).map((e) => e.type)).toEqual([0, 1, 4, 1, 9]);
  }, 90_000);
});
