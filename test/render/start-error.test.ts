/**
 * A command the runtime cannot start: generated wrappers in real bash on minicondor's apptainer
 * shim, which prints what Apptainer and SingularityCE print (docs/container-runtimes.md#a-command-that-cannot-start)
 * and the status the wrapper gives it (docs/status.md#why-a-container-did-not-start).
 *
 * Every scenario is queued when this file loads and they run a few at a time; each test awaits its own.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ContainerPlan, JobPlan, MountPlan, ProbePlan } from "../../src/core/types.ts";
import { renderWrapper } from "../../src/render/wrapper.ts";
import { basePlan, container, initContainer, minimalPlan, withEnvFiles } from "./plans.ts";
import { BASH, cleanup, materialize, readState, type RunResult, runWrapper, SHIM, tempDir, wrapperLog } from "./harness.ts";
import { slot } from "./pool.ts";
import { measureLoad, scaled } from "../helpers/sidecar.ts";

setDefaultTimeout(150_000);

const NOT_FOUND = (cmd: string) => `FATAL:   "${cmd}": executable file not found in $PATH`;

const shared: MountPlan = { source: { kind: "sandbox", path: "emptydir/shared" }, target: "/shared", readOnly: false };

/** The plan, each container numbered in order. */
function plan(over: Partial<JobPlan>): JobPlan {
  return withEnvFiles(
    basePlan({
      runtime: { pinned: SHIM, searchPath: [], noHome: true, oldRuntime: "warn" },
      emptyDirs: ["shared"],
      terminationGracePeriodSeconds: 5,
      ...over,
      containers: (over.containers ?? basePlan().containers).map((c, index) => ({ ...c, index })),
    }),
  );
}

function sh(name: string, script: string, over: Partial<ContainerPlan> = {}): ContainerPlan {
  return container(name, { command: ["bash", "-c", script], mounts: [shared], ...over });
}

/**
 * A program that does what the runtime does when it cannot start a command: the runtime's very
 * line on stderr, exit 255. It counts its runs in /shared/<name>-runs.
 */
function mimic(name: string, line = NOT_FOUND("nosuchcmd")): string[] {
  return ["bash", "-c", `echo run >>/shared/${name}-runs; printf '%s\\n' "$1" >&2; exit 255`, name, line];
}

// A probe's exec goes through the runtime (a bash shim here) and takes seconds on a busy
// machine: a probe killed at its timeout has no runtime line to keep, so its timeout is only a
// guard against a hang, scaled by the load measured when this file loads (test/helpers/sidecar.ts).
await measureLoad();
const PROBE_TIMEOUT_SECONDS = Math.ceil(scaled(30_000) / 1000);

function probe(command: string[]): ProbePlan {
  return {
    handler: { kind: "exec", command },
    initialDelaySeconds: 0,
    periodSeconds: 1,
    timeoutSeconds: PROBE_TIMEOUT_SECONDS,
    successThreshold: 1,
    failureThreshold: 1,
  };
}

interface Outcome extends RunResult {
  dir: string;
}

/** Queues a scenario now (a few at a time: ./pool.ts); resolves when its wrapper exits. */
function scenario(p: JobPlan, prepare?: (dir: string) => void): Promise<Outcome> {
  return slot(async () => {
    const dir = materialize(p);
    prepare?.(dir);
    return { ...(await runWrapper(dir)), dir };
  });
}

const runs = (o: Outcome, name: string) => {
  const f = join(o.dir, `emptydir/shared/${name}-runs`);
  return existsSync(f) ? readFileSync(f, "utf8").split("\n").filter(Boolean).length : 0;
};

// ---------------------------------------------------------------------------------------------
// Scenarios

const sideBySide = scenario(plan({
  containers: [
    container("missing", { command: ["nosuchcmd"], args: ["--flag"], mounts: [shared] }),
    container("mimic", { command: mimic("mimic"), mounts: [shared] }),
  ],
}));

const notExecutable = scenario(plan({ containers: [container("main", { command: ["/etc/passwd"] })] }));

// `run` of the image's default command: an image the shim does not know has no entrypoint, so its
// arguments are the command (a CMD-only image whose CMD the pod's args replace).
const runDefault = scenario(plan({
  containers: [container("main", { image: { kind: "container", uri: "docker://registry.example/cmd-only:1" }, args: ["nosuchentry"] })],
}));

const initCannotStart = scenario(plan({
  initContainers: [initContainer("setup", 0, { command: ["nosuchinit"], mounts: [shared] })],
  containers: [sh("main", "touch /shared/main-ran")],
}));

const probes = scenario(plan({
  containers: [
    sh("live", "exec sleep 60", { livenessProbe: probe(["nosuchprobe"]) }),
    sh("startup", "exec sleep 60", { startupProbe: probe(["/etc/passwd"]) }),
    sh("mimicprobe", "exec sleep 60", { livenessProbe: probe(mimic("mimicprobe", NOT_FOUND("nosuchprobe"))) }),
  ],
}));

const hooks = scenario(plan({
  containers: [
    sh("hook", "exec sleep 60", { postStart: { kind: "exec", command: ["nosuchhook"] } }),
    sh("mimichook", "exec sleep 60", { postStart: { kind: "exec", command: mimic("mimichook", NOT_FOUND("nosuchhook")) } }),
  ],
}));

// The container's own --env-file (a singularity option, read by the runtime on the host) puts
// /shared/bin on PATH, whose `mytool` prints the runtime's line for itself. The check must resolve
// commands as the run did.
const envFileDir = tempDir("start-error-env-");
writeFileSync(join(envFileDir, "user.env"), "PATH=/shared/bin:/usr/bin:/bin\n");
const withEnvFile = scenario(
  plan({
    containers: [
      container("mytool", { command: ["mytool"], mounts: [shared], execOptions: [`--env-file=${envFileDir}/user.env`] }),
      container("missing", { command: ["nosuchcmd"], execOptions: [`--env-file=${envFileDir}/user.env`] }),
    ],
  }),
  (dir) => {
    mkdirSync(join(dir, "emptydir/shared/bin"), { recursive: true });
    writeFileSync(join(dir, "emptydir/shared/bin/mytool"), `#!/bin/bash\necho run >>/shared/mytool-runs\necho '${NOT_FOUND("mytool")}' >&2\nexit 255\n`, {
      mode: 0o755,
    });
  },
);

// ---------------------------------------------------------------------------------------------

describe("a command the runtime cannot start", () => {
  test("a missing command is StartError 128 with the runtime's line; the same line from a program is Error 255, run once", async () => {
    const o = await sideBySide;
    expect(readState(o.dir, "missing")).toMatchObject({ state: "terminated", reason: "StartError", exitCode: 128, message: NOT_FOUND("nosuchcmd") });
    const m = readState(o.dir, "mimic")!;
    expect(m).toMatchObject({ state: "terminated", reason: "Error", exitCode: 255 });
    expect(m.message).toBeUndefined();
    // The check never starts the program a second time: the kernel refused that exec.
    expect(runs(o, "mimic")).toBe(1);
    expect(wrapperLog(o.dir)).toMatch(/c\.mimic start check: FATAL: {3}exec \S+\/bash failed: argument list too long/);
    expect(o.code).toBe(255);
  });

  test("a command that is not executable", async () => {
    const o = await notExecutable;
    expect(readState(o.dir, "main")).toMatchObject({ reason: "StartError", exitCode: 128, message: "FATAL:   permission denied" });
    expect(o.code).toBe(128);
  });

  test("run of the image's default command", async () => {
    const o = await runDefault;
    expect(readState(o.dir, "main")).toMatchObject({ reason: "StartError", exitCode: 128, message: NOT_FOUND("nosuchentry") });
  });

  test("an init container that cannot start stops the pod, the reason on the init container", async () => {
    const o = await initCannotStart;
    expect(readState(o.dir, "setup", true)).toMatchObject({ state: "terminated", reason: "StartError", exitCode: 128, message: NOT_FOUND("nosuchinit") });
    expect(readState(o.dir, "main")).toMatchObject({ state: "terminated", reason: "InitContainerFailed", exitCode: 128 });
    expect(existsSync(join(o.dir, "emptydir/shared/main-ran"))).toBe(false);
    expect(o.code).toBe(128);
  });

  test("probes keep their reason, with the runtime's line as the message; a probe program's own line is not one", async () => {
    const o = await probes;
    expect(readState(o.dir, "live")).toMatchObject({ reason: "LivenessProbeFailed", message: NOT_FOUND("nosuchprobe") });
    expect(readState(o.dir, "startup")).toMatchObject({ reason: "StartupProbeFailed", message: "FATAL:   permission denied" });
    const m = readState(o.dir, "mimicprobe")!;
    expect(m.reason).toBe("LivenessProbeFailed");
    expect(m.message).toBeUndefined();
    expect(runs(o, "mimicprobe")).toBe(1);
  });

  test("a postStart hook keeps PostStartHookError, with the runtime's line as the message", async () => {
    const o = await hooks;
    expect(readState(o.dir, "hook")).toMatchObject({ reason: "PostStartHookError", message: NOT_FOUND("nosuchhook") });
    const m = readState(o.dir, "mimichook")!;
    expect(m.reason).toBe("PostStartHookError");
    expect(m.message).toBeUndefined();
    expect(runs(o, "mimichook")).toBe(1);
    expect(wrapperLog(o.dir)).toContain(`c.mimichook postStart: ${NOT_FOUND("nosuchhook")}`);
  });

  test("the check resolves the command with the container's own --env-file", async () => {
    const o = await withEnvFile;
    expect(readState(o.dir, "missing")).toMatchObject({ reason: "StartError", exitCode: 128, message: NOT_FOUND("nosuchcmd") });
    const m = readState(o.dir, "mytool")!;
    expect(m).toMatchObject({ reason: "Error", exitCode: 255 });
    expect(m.message).toBeUndefined();
    expect(runs(o, "mytool")).toBe(1);
  });
});

/**
 * The check's env file, from the wrapper's own not_started run in bash with a stand-in for the
 * runtime that prints the file it was given and fails with `answer`.
 */
function checkFile(setup: string, answer: string): { out: string; code: number | null } {
  const dir = tempDir("start-check-");
  const lib = join(dir, "lib.sh");
  writeFileSync(lib, renderWrapper(minimalPlan).replace(/\nmain( "\$@")?\n*$/, "\n"));
  const r = Bun.spawnSync([
    BASH,
    "-c",
    `source "$1" || exit 9
    RUN_DIR=$2 WLOG=$2/wrapper.log C_KEY=c.main C_IMAGE_KIND=container CHECK_BYTES=8 RT=/bin/false INST=x RT_ENV_PREFIX=APPTAINERENV_
    C_EXEC_OPTIONS=() EXEC_FLAGS=(--cleanenv --no-eval)
    watched() { local a prev=; for a in "$@"; do [[ $prev == --env-file ]] && cat -- "$a"; prev=$a; done; WATCHED_WHY=$ANSWER; return 255; }
    ${setup}
    not_started 'FATAL:   "cmd": executable file not found in $PATH' exec cmd`,
    "check",
    lib,
    dir,
  ], { env: { ANSWER: answer, DIR: dir, PATH: "/usr/bin:/bin" }, stdout: "pipe" });
  return { out: r.stdout.toString(), code: r.exitCode };
}

describe("the check's env file", () => {
  const same = NOT_FOUND("cmd");
  test("the container's own --env-file, then the long variable; never a workingDir that looks like one", () => {
    const user = join(tempDir("start-check-env-"), "user.env");
    writeFileSync(user, "PATH=/opt/bin:/bin");
    const secret = join(tempDir("start-check-env-"), "secret.env");
    writeFileSync(secret, "SECRET=do-not-copy\n");
    const r = checkFile(`C_EXEC_OPTIONS=(--env-file=${user}) EXEC_FLAGS+=("\${C_EXEC_OPTIONS[@]}" --pwd --env-file=${secret})`, same);
    expect(r).toEqual({ out: "PATH=/opt/bin:/bin\nSIDECAR_START_CHECK=xxxxxxxx\n", code: 0 });
  });

  test("without the flag, the file the runtime's variable names", () => {
    const user = join(tempDir("start-check-env-"), "user.env");
    writeFileSync(user, "A=b\n");
    expect(checkFile(`export APPTAINER_ENV_FILE=${user}`, same)).toEqual({ out: "A=b\n\nSIDECAR_START_CHECK=xxxxxxxx\n", code: 0 });
  });

  test("another answer: the program's own line", () => {
    expect(checkFile("", "FATAL:   exec /usr/bin/cmd failed: argument list too long").code).toBe(1);
  });
});

afterAll(cleanup);
