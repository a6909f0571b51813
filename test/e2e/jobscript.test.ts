// interLink's jobScript end to end (docs/interlink.md#the-create-request): with a JobScriptTemplate
// or a JobScriptBuilderURL, /create carries a whole script, and the job runs it instead of the
// containers (docs/pod-to-job.md#the-job-script). A deliberate code channel, off by default
// (docs/threat-model.md#deliberate-code-channels). Real HTTP to running sidecars, jobs on minicondor;
// strace, when it works here, records every execve while the scripts run: the pod's secret env
// reaches the script through its environment, never a command line
// (docs/threat-model.md#3-secret-values-on-command-lines).
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { dataEntry, type Json, makeCreateRequest, secretObject } from "../fixtures/pods.ts";
import { CONDOR_BIN, eventually, measureLoad, scaled, type Sidecar, sidecars } from "../helpers/sidecar.ts";
import { attachTrace, execsWith, straceCheck } from "../render/harness.ts";

// Hooks and tests that start processes have explicit timeouts, scaled by the load measured now
// (test/helpers/sidecar.ts): a process start alone can take bun's default 5 s on a busy machine.
await measureLoad();

const check = straceCheck();
if ("problem" in check) console.error(`SKIPPED (the argv part only): the argv audit needs strace: ${check.problem}`);

const tag = Math.random().toString(36).slice(2, 8);
const SECRET = `sEcReT-for-the-script-${tag}`;
const sum = (v: string) => new Bun.CryptoHasher("sha256").update(`${v}\n`).digest("hex");
let n = 0;
const uid = () => `70b5c000-0000-4000-8000-${tag.padStart(6, "0")}${String(++n).padStart(6, "0")}`;

let off: Sidecar;
let on: Sidecar;

const allTerminated = (sc: Sidecar, pod: Json) =>
  eventually(
    async () => {
      const s = await sc.statusOf(pod);
      const all = [...(s?.initContainers ?? []), ...(s?.containers ?? [])];
      return all.length && all.every((c: Json) => c.state.terminated) ? s : undefined;
    },
    120_000,
    `pod ${pod.metadata.name} to end`,
  );
function jobsFor(sc: Sidecar, u: string): number {
  const env = { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" };
  const q = Bun.spawnSync([join(CONDOR_BIN, "condor_q"), "-allusers", "-af", "InterLinkPodUID"], { env });
  const h = Bun.spawnSync([join(CONDOR_BIN, "condor_history"), "-af", "InterLinkPodUID"], { env });
  return `${q.stdout}${h.stdout}`.split("\n").filter((l) => l.trim() === u).length;
}

/** A pod as interLink sends it with a job script: an init container, two containers, a secret in env. */
function scriptPod(name: string, script: string): Json {
  const main = {
    name: "main",
    image: "busybox:1.36",
    command: ["false"],
    resources: {},
    env: [{ name: "PW", valueFrom: { secretKeyRef: { name: "db", key: "pw" } } }],
  };
  return makeCreateRequest({
    metadata: { name, uid: uid() },
    spec: {
      restartPolicy: "Never",
      initContainers: [{ name: "prepare", image: "busybox:1.36", command: ["false"], resources: {} }],
      containers: [main, { name: "helper", image: "busybox:1.36", command: ["false"], resources: {} }],
    },
    container: [dataEntry("prepare"), dataEntry("main", { secrets: [secretObject("db", { pw: SECRET })] }), dataEntry("helper")],
    jobScript: script,
  });
}

const { start } = sidecars();
beforeAll(async () => {
  [off, on] = await Promise.all([
    start(),
    start({ config: "CommandPrefix: 'export FROM_PREFIX=prefix-ran-first'\nChannels:\n  JobScript: true\n" }),
  ]);
}, 60_000);

describe("the channel off (the default)", () => {
  test("a create with a script: 400 saying how to turn it on, one line, nothing submitted, nothing written", async () => {
    const req = scriptPod("refused", "#!/bin/bash\necho never runs\n");
    const r = await off.call("POST", "/create", req);
    expect(r.status).toBe(400);
    expect(r.body.trim().split("\n")).toHaveLength(1);
    expect(r.body).toContain('pod "default/refused": jobScript: interLink sent a job script');
    expect(r.body).toContain("set Channels.JobScript: true in the sidecar's SidecarConfig.yaml");
    expect(r.body).not.toContain("never runs");
    expect(existsSync(join(off.dataRoot, "pods", req.pod.metadata.uid))).toBe(false);
    expect(jobsFor(off, req.pod.metadata.uid)).toBe(0);
  }, scaled(60_000));
});

describe("the channel on", () => {
  // The script waits for this file, so that the test sees it running without a timed wait.
  let gate: string;
  let ok: Json;
  let failing: Json;
  let running: Json;
  let okFinal: Json;
  let failingFinal: Json;
  let trace = "";
  let podFolderMode = 0;
  let shipped: { sub: string; wrapper: string };

  beforeAll(async () => {
    gate = join(on.dir, "gate");
    const t = "problem" in check ? undefined : await attachTrace(check.strace, on.proc.pid, join(on.dir, "execve.trace"));
    ok = scriptPod(
      "script-ok",
      [
        "#!/bin/bash",
        'echo "script starts; CommandPrefix said: ${FROM_PREFIX:-nothing}"',
        'echo "my mode: $(stat -c %a "$0")"',
        // A digest, not the value: the secret on the script's own command line would spoil the audit.
        `if [ "$(printenv PW | sha256sum | cut -c1-64)" = ${sum(SECRET)} ]; then echo "the secret is in my environment"; fi`,
        `while [ ! -e ${gate} ]; do sleep 0.2; done`,
        "echo script ends",
        "",
      ].join("\n"),
    );
    failing = scriptPod("script-fails", "#!/bin/bash\necho failing on purpose >&2\nexit 42\n");
    for (const req of [ok, failing]) expect((await on.call("POST", "/create", req)).status).toBe(200);
    running = await eventually(
      async () => {
        const s = await on.statusOf(ok.pod);
        return s?.containers?.length === 2 && s.containers.every((c: Json) => c.state.running) ? s : undefined;
      },
      120_000,
      "the script to run",
    );
    const dir = join(on.dataRoot, "pods", ok.pod.metadata.uid);
    podFolderMode = statSync(join(dir, "job-script.sh")).mode & 0o777;
    shipped = { sub: readFileSync(join(dir, "job.sub"), "utf8"), wrapper: readFileSync(join(dir, "job.sh"), "utf8") };
    writeFileSync(gate, "");
    [okFinal, failingFinal] = await Promise.all([allTerminated(on, ok.pod), allTerminated(on, failing.pod)]);
    trace = (await t?.stop()) ?? "";
  }, 300_000);

  test("while the script runs: init containers Completed with 0, every container running", () => {
    expect(running.initContainers.map((c: Json) => [c.name, c.state.terminated?.reason, c.state.terminated?.exitCode])).toEqual([["prepare", "Completed", 0]]);
    expect(running.containers.map((c: Json) => [c.name, Object.keys(c.state)])).toEqual([["main", ["running"]], ["helper", ["running"]]]);
  }, scaled(60_000));

  test("then every container terminated with the script's exit code: 0", () => {
    expect(okFinal.initContainers.map((c: Json) => [c.name, c.state.terminated.reason, c.state.terminated.exitCode])).toEqual([["prepare", "Completed", 0]]);
    expect(okFinal.containers.map((c: Json) => [c.name, c.state.terminated.reason, c.state.terminated.exitCode])).toEqual([["main", "Completed", 0], [
      "helper",
      "Completed",
      0,
    ]]);
  }, scaled(60_000));

  test("and a nonzero one: 42, Error, for every container; the init containers still Completed", () => {
    expect(failingFinal.initContainers.map((c: Json) => [c.name, c.state.terminated.reason, c.state.terminated.exitCode])).toEqual([[
      "prepare",
      "Completed",
      0,
    ]]);
    expect(failingFinal.containers.map((c: Json) => [c.name, c.state.terminated.reason, c.state.terminated.exitCode])).toEqual([["main", "Error", 42], [
      "helper",
      "Error",
      42,
    ]]);
  }, scaled(60_000));

  test("the first container's log is the script's output (stdout and stderr); the others' are empty", async () => {
    const main = await on.logs(ok.pod, "main");
    expect([main.status, main.body]).toEqual([
      200,
      [
        "script starts; CommandPrefix said: prefix-ran-first",
        "my mode: 700",
        "the secret is in my environment",
        "script ends",
        "",
      ].join("\n"),
    ]);
    expect((await on.logs(failing.pod, "main")).body).toBe("failing on purpose\n");
    for (const pod of [ok.pod, failing.pod]) {
      expect((await on.logs(pod, "helper")).body).toBe("");
      expect((await on.logs(pod, "prepare")).body).toBe("");
    }
  }, scaled(60_000));

  test("the script is a 0700 file of the pod folder, named by the wrapper and the submit file, never pasted into them", () => {
    expect(podFolderMode).toBe(0o700);
    expect(shipped.sub).toMatch(/^transfer_input_files = .*\bjob-script\.sh\b/m);
    expect(shipped.wrapper).toContain("\nJOB_SCRIPT='job-script.sh'");
    for (const text of [shipped.sub, shipped.wrapper]) {
      expect(text).not.toContain("script starts");
      expect(text).not.toContain(sum(SECRET));
    }
  }, scaled(60_000));

  test.skipIf("problem" in check)("the secret env reached the script through its environment: no execve carries it", () => {
    // The trace saw the script start (by its path) and the commands it ran.
    expect(execsWith(trace, "job-script.sh").length).toBeGreaterThan(0);
    expect(execsWith(trace, "sha256sum").length).toBeGreaterThan(0);
    expect(execsWith(trace, SECRET)).toEqual([]);
  }, scaled(60_000));
});
