// docs/threat-model.md#2-the-sidecar-follows-a-link-the-job-left-in-its-pod-folder: with SharedFilesystem the job writes straight into its pod folder on the
// submit host, so anything the sidecar reads back from there (logs, state files) may have been
// replaced by the job: a symlink to a file of the submit host, a hard link to one, a FIFO. The
// sidecar must read none of them. The job here plants them with its pre-exec snippet, which runs
// in the wrapper (the container logs are in $_CONDOR_JOB_IWD, the pod folder; the state files
// come back into it with the output).
import { beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { eventually, measureLoad, scaled, SETUP_TIMEOUT_MS, type Sidecar, sidecars } from "../helpers/sidecar.ts";
import { shQuote } from "../../src/render/sh.ts";

// Hooks and tests that start processes have explicit timeouts, scaled by the load measured now
// (test/helpers/sidecar.ts): a process start alone can take bun's default 5 s on a busy machine.
await measureLoad();

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;
let n = 0;
const uid = () => `6666ffff-0000-4000-8000-${String(++n).padStart(12, "0")}`;
const SECRET = "submit-host-secret-4e1f";

let sc: Sidecar;
let secretFile: string;
const { start } = sidecars();
beforeAll(async () => {
  sc = await start({ config: "SharedFilesystem: true", env: { MINICONDOR_SHARED_FS: "1" } });
  // A file of the submit host that the sidecar's user can read and the pod must not.
  secretFile = join(sc.dir, "token");
  writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 });
}, scaled(SETUP_TIMEOUT_MS));

function pod(name: string, preExec: string, script = "sleep 60") {
  return makeCreateRequest({
    metadata: { name, uid: uid(), annotations: { "slurm-job.vk.io/pre-exec": preExec } },
    spec: { restartPolicy: "Never", containers: [{ name: "main", image: "busybox", command: ["sh", "-c", script], resources: {} }] },
  });
}
const statusOf = (p: Json): Promise<Json | undefined> => sc.statusOf(p);
const logs = (p: Json, opts: Json = {}) => sc.logs(p, "main", opts);
async function running(p: Json): Promise<void> {
  expect((await sc.call("POST", "/create", p)).status).toBe(200);
  await eventually(async () => ((await statusOf(p.pod))?.containers[0].state.running ? true : undefined), 60_000, `${p.pod.metadata.name} running`);
}

describe("files the job left in its pod folder (docs/threat-model.md#2-the-sidecar-follows-a-link-the-job-left-in-its-pod-folder; SharedFilesystem)", () => {
  test("a container log replaced by a symlink to a submit-host file is refused, not served", async () => {
    const p = pod("symlog", `ln -sf ${shQuote(secretFile)} "$_CONDOR_JOB_IWD/c.main.log"`);
    await running(p);
    const r = await logs(p.pod);
    expect(r.status).toBe(403);
    expect(r.body).toMatch(/^Pod default\/symlog: container "main": c\.main\.log is a symbolic link/);
    expect(r.body).not.toContain(SECRET);
    // A follow is refused the same way, before anything is sent.
    const f = await logs(p.pod, { Follow: true });
    expect(f.status).toBe(403);
    expect(f.body).not.toContain(SECRET);
    await sc.call("POST", "/delete", p.pod);
  }, 90_000);

  test("a previous log that is a hard link to a submit-host file is refused", async () => {
    const p = pod("hardlog", `ln -f ${shQuote(secretFile)} "$_CONDOR_JOB_IWD/c.main.prev.log"`);
    await running(p);
    const r = await logs(p.pod, { Previous: true });
    expect(r.status).toBe(403);
    expect(r.body).toContain("hard links");
    expect(r.body).not.toContain(SECRET);
    await sc.call("POST", "/delete", p.pod);
  }, 90_000);

  test("a log replaced by a FIFO is refused at once (no read that blocks the sidecar)", async () => {
    const p = pod("fifolog", 'rm -f "$_CONDOR_JOB_IWD/c.main.log" && mkfifo "$_CONDOR_JOB_IWD/c.main.log"');
    await running(p);
    const r = await logs(p.pod);
    expect(r.status).toBe(403);
    expect(r.body).toContain("not a regular file");
    // The sidecar still answers.
    expect((await sc.call("GET", "/status", [p.pod])).status).toBe(200);
    await sc.call("POST", "/delete", p.pod);
  }, 90_000);

  test("a state file in the pod folder replaced by a symlink does not decide the container's end", async () => {
    // Output transfer sends a symlink in the sandbox as the file it points to (the job's own
    // word, like any file it writes), but the job can also plant a link in the pod folder itself.
    // The snippet plants one there, drops the sandbox's state file (so that nothing comes back
    // over the link) and kills the wrapper: the job ends by a signal, and the file the link
    // points to says the container completed with 0.
    const forged = join(sc.dir, "forged-state");
    writeFileSync(forged, "1 terminated Completed 0 1 2 0 0 - - - - -\n");
    const plant = `mkdir -p "$_CONDOR_JOB_IWD/podstate" && ln -sf ${shQuote(forged)} "$_CONDOR_JOB_IWD/podstate/c.main"`;
    const p = pod("forger", `${plant} && rm -f podstate/c.main && kill -9 "$PPID"`);
    expect((await sc.call("POST", "/create", p)).status).toBe(200);
    const st = await eventually(
      async () => {
        const s = await statusOf(p.pod);
        return s?.containers[0].state.terminated ? s : undefined;
      },
      60_000,
      "the forger ended",
    );
    const t = st.containers[0].state.terminated;
    expect(t.reason).not.toBe("Completed");
    expect(t.exitCode).toBe(137);
    expect(sc.log()).toContain("ignoring a file of the job that is not a plain file of its pod folder");
    await sc.call("POST", "/delete", p.pod);
  }, 90_000);
});
