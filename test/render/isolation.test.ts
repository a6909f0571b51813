/**
 * Symlinks a pod plants must not decide what is mounted (docs/threat-model.md#1-symlinks-planted-by-the-pod-decide-what-is-mounted; the kubelet's
 * CVE-2017-1002101): real bash runs the wrapper with minicondor's apptainer shim, whose binds are
 * real, so a bind the wrapper let through would show the host's files to the container.
 *
 * Each scenario plants its symlink the way a hostile pod would (an init container in an emptyDir,
 * or a link inside an allowed hostPath prefix) and checks three things: the container that would
 * have used the path never ran, it ended terminated with CreateContainerConfigError, exit code 1
 * and the reason in its message, and nothing was created outside the sandbox.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ContainerPlan, JobPlan, MountPlan } from "../../src/core/types.ts";
import { basePlan, container, initContainer, withEnvFiles } from "./plans.ts";
import { cleanup, materialize, readState, type RunResult, runWrapper, SHIM, tempDir, wrapperLog } from "./harness.ts";
import { slot } from "./pool.ts";

setDefaultTimeout(150_000);

const enc = new TextEncoder();

function plan(over: Partial<JobPlan>): JobPlan {
  return withEnvFiles(
    basePlan({
      runtime: { pinned: SHIM, searchPath: [], noHome: true, oldRuntime: "warn" },
      emptyDirs: ["shared"],
      backoffInitialSeconds: 0,
      backoffMaxSeconds: 0,
      terminationGracePeriodSeconds: 5,
      ...over,
    }),
  );
}

const mount = (kind: "sandbox" | "host", root: string, sub: string, target: string, readOnly = false): MountPlan => ({
  source: { kind, path: sub ? `${root}/${sub}` : root, root },
  target,
  readOnly,
});
const shared = mount("sandbox", "emptydir/shared", "", "/shared");

/** A container that leaves a mark in the sandbox (through its own, checked mount) when it runs. */
function marker(name: string, mounts: MountPlan[], over: Partial<ContainerPlan> = {}): ContainerPlan {
  return container(name, { command: ["bash", "-c", `: > /shared/ran.${name}`], mounts: [shared, ...mounts], ...over });
}

/** An init container that plants the links (a shell script run in the pod's emptyDir). */
function planter(script: string): ContainerPlan {
  return initContainer("plant", 0, { command: ["bash", "-c", `cd /shared && ${script}`], mounts: [shared] });
}

interface Outcome extends RunResult {
  dir: string;
}

/** Queues a scenario now (a few at a time: ./pool.ts); resolves when its wrapper exits. */
function scenario(p: JobPlan, prepare?: (dir: string) => void): Promise<Outcome> {
  return slot(async () => {
    const dir = materialize(p);
    prepare?.(dir);
    const r = await runWrapper(dir);
    return { ...r, dir };
  });
}

/** The refused container: never ran, terminated CreateContainerConfigError, exit 1, the reason in its message. */
function expectRefused(o: Outcome, name: string, why: RegExp): void {
  expect(existsSync(join(o.dir, `emptydir/shared/ran.${name}`))).toBe(false);
  const s = readState(o.dir, name);
  expect(s).toMatchObject({ state: "terminated", reason: "CreateContainerConfigError", exitCode: 1 });
  expect(s?.message ?? "").toMatch(why);
  expect(wrapperLog(o.dir)).toContain("not starting the container");
}

// A folder of the "host" the pod must not reach, outside every sandbox and prefix.
const host = tempDir("iso-host-");
const secretDir = join(host, "secret");
mkdirSync(secretDir);
writeFileSync(join(secretDir, "data"), "host secret\n");
const allowed = join(host, "allowed");
mkdirSync(join(allowed, "ok"), { recursive: true });
writeFileSync(join(allowed, "ok/file"), "allowed\n");
symlinkSync(secretDir, join(allowed, "out")); // inside the prefix, leading out of it
symlinkSync("ok", join(allowed, "in")); // inside the prefix, staying in it

// 1. subPath through a symlink an init container planted: to a host folder, to another
//    container's env file (a file mount), to the wrapper's control folder, through a name that
//    --bind would split.
const subPathEscapes = scenario(
  plan({
    initContainers: [
      planter(
        `ln -s ${secretDir} escape && ln -s ../../env envs && ln -s ../../.wrapper control && mkdir 'a,b:x' && ln -s 'a,b:x' comma`,
      ),
    ],
    containers: [
      marker("escape", [mount("sandbox", "emptydir/shared", "escape", "/x")]),
      marker("envfile", [mount("sandbox", "emptydir/shared", "envs/c.escape.env", "/x.env")], { index: 1 }),
      marker("control", [mount("sandbox", "emptydir/shared", "control", "/x")], { index: 2 }),
      marker("comma", [mount("sandbox", "emptydir/shared", "comma", "/x")], { index: 3 }),
      // Control: a link that stays inside the volume is followed, and the bind is its target.
      marker("inside", [mount("sandbox", "emptydir/shared", "comma-free", "/x")], { index: 4 }),
    ],
  }),
  (dir) => {
    // The control container's subPath: a link inside the volume to a folder inside it.
    mkdirSync(join(dir, "emptydir/shared/real"), { recursive: true });
    writeFileSync(join(dir, "emptydir/shared/real/f"), "inside\n");
    symlinkSync("real", join(dir, "emptydir/shared/comma-free"));
  },
);

// 2. hostPath: a volume whose path is a link inside the allowed prefix leading out of it; a
//    subPath of an allowed hostPath through such a link; a prefix given as a link itself is
//    resolved too; a link that stays inside the prefix is fine.
const hostPaths = scenario(
  plan({
    hostPathPrefixes: [allowed],
    containers: [
      marker("hostlink", [mount("host", join(allowed, "out"), "", "/h")]),
      marker("hostsub", [mount("host", allowed, "out", "/h")], { index: 1 }),
      container("hostok", {
        index: 2,
        command: ["bash", "-c", "cat /h/file /h2/file > /shared/hostok.out"],
        mounts: [shared, mount("host", join(allowed, "in"), "", "/h"), mount("host", allowed, "ok", "/h2")],
      }),
    ],
  }),
);

// 3. A mount point whose parent is a symlink: the nested mount's point would be made through it,
//    on the host (mkdir -p), and so would the empty file of a file mount.
const hostDirTarget = join(host, "made-by-mkdir");
const hostFileTarget = join(host, "made-by-touch");
const points = scenario(
  plan({
    emptyDirs: ["shared", "data", "inner"],
    files: [{ path: "volumes/cfg/app.yaml", content: enc.encode("a: 1\n"), mode: 0o644, secret: false }],
    initContainers: [
      initContainer("plant", 0, {
        command: ["bash", "-c", `ln -s ${host} /data/sub && ln -s ${hostFileTarget} /data/conf.yaml`],
        mounts: [mount("sandbox", "emptydir/data", "", "/data")],
      }),
    ],
    containers: [
      marker("dirpoint", [mount("sandbox", "emptydir/data", "", "/data"), mount("sandbox", "emptydir/inner", "", "/data/sub/made-by-mkdir")]),
      marker("filepoint", [mount("sandbox", "emptydir/data", "", "/data"), mount("sandbox", "volumes/cfg", "app.yaml", "/data/conf.yaml", true)], {
        index: 1,
      }),
    ],
  }),
);

// 4. A refused mount is a failed run: the restart policy decides, and the last state keeps the reason.
const restarts = scenario(
  plan({
    restartPolicy: "OnFailure",
    maxRestarts: 1,
    initContainers: [planter(`ln -s ${secretDir} escape`)],
    containers: [marker("again", [mount("sandbox", "emptydir/shared", "escape", "/x")])],
  }),
);

afterAll(cleanup);

describe("a subPath through a symlink an init container planted", () => {
  test("to a host folder: refused, the container never runs", async () => {
    const o = await subPathEscapes;
    expectRefused(o, "escape", /subPath escape of emptydir\/shared resolves to .*secret, outside its volume/);
  });

  test("to another container's env file (a file mount): refused", async () => {
    const o = await subPathEscapes;
    expectRefused(o, "envfile", /resolves to .*\/env\/c\.escape\.env, outside its volume/);
  });

  test("to the wrapper's control folder: refused", async () => {
    const o = await subPathEscapes;
    expectRefused(o, "control", /resolves to .*\/\.wrapper, outside its volume/);
  });

  test("to a name --bind would split at ',' and ':': refused", async () => {
    const o = await subPathEscapes;
    expectRefused(o, "comma", /cannot be bound/);
  });

  test("a link that stays inside the volume is followed; the job fails only by the refused containers", async () => {
    const o = await subPathEscapes;
    expect(existsSync(join(o.dir, "emptydir/shared/ran.inside"))).toBe(true);
    expect(readState(o.dir, "inside")).toMatchObject({ state: "terminated", reason: "Completed", exitCode: 0 });
    expect(o.code).toBe(1);
  });
});

describe("hostPath volumes are resolved on the worker", () => {
  test("a volume whose path is a link out of the allowed prefix: refused", async () => {
    const o = await hostPaths;
    expectRefused(o, "hostlink", /hostPath .*\/allowed\/out resolves to .*\/secret, which is not below an allowed prefix/);
  });

  test("a subPath of an allowed hostPath through such a link: refused", async () => {
    const o = await hostPaths;
    expectRefused(o, "hostsub", /subPath out of .*\/allowed resolves to .*\/secret, outside its volume/);
  });

  test("links that stay inside the prefix are fine", async () => {
    const o = await hostPaths;
    expect(readFileSync(join(o.dir, "emptydir/shared/hostok.out"), "utf8")).toBe("allowed\nallowed\n");
  });
});

describe("mount points are made one component at a time, never through a symlink", () => {
  test("a nested mount whose parent is a symlink to the host: refused, nothing made on the host", async () => {
    const o = await points;
    expectRefused(o, "dirpoint", /cannot make the mount point of \/data\/sub\/made-by-mkdir: .*\/emptydir\/data\/sub is not a plain folder/);
    expect(existsSync(hostDirTarget)).toBe(false);
  });

  test("a file mount whose point is a dangling symlink: refused, no file made on the host", async () => {
    const o = await points;
    expectRefused(o, "filepoint", /cannot make the mount point of \/data\/conf\.yaml: .*conf\.yaml is not a plain file/);
    expect(existsSync(hostFileTarget)).toBe(false);
  });
});

describe("a refused mount is a failed run", () => {
  test("the restart policy applies; the last state and the job's exit code say why", async () => {
    const o = await restarts;
    const s = readState(o.dir, "again");
    expect(s).toMatchObject({ state: "terminated", reason: "CreateContainerConfigError", exitCode: 1, restartCount: 1 });
    expect(s?.last).toMatchObject({ exitCode: 1, reason: "CreateContainerConfigError" });
    expect(s?.message).toMatch(/outside its volume/);
    expect(o.code).toBe(1);
  });
});
