// Flavors and ImageOverrides as a site runs them (docs/pod-to-job.md#flavors,
// docs/pod-to-job.md#image-overrides): real HTTP to a sidecar on minicondor, the job ad read
// back with condor_q, the runtime's view read from what the job really ran.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { CONDOR_BIN, eventually, measureLoad, scaled, type Sidecar, sidecars, TEARDOWN_TIMEOUT_MS } from "../helpers/sidecar.ts";
import { sidecarEntry } from "../helpers/bundle.ts";

// Hooks and tests that start processes have explicit timeouts, scaled by the load measured now
// (test/helpers/sidecar.ts): a process start alone can take bun's default 5 s on a busy machine.
await measureLoad();

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;
let n = 0;
const uid = () => `7777aaaa-0000-4000-8000-${String(++n).padStart(12, "0")}`;

function pod(name: string, o: { image?: string; script?: string; annotations?: Record<string, string>; containers?: number } = {}) {
  const containers = Array.from({ length: o.containers ?? 1 }, (_, i) => ({
    name: i === 0 ? "main" : `side${i}`,
    image: o.image ?? "busybox",
    command: ["sh", "-c", o.script ?? "sleep 120"],
    resources: {},
  }));
  return makeCreateRequest({ metadata: { name, uid: uid(), annotations: o.annotations ?? {} }, spec: { containers } });
}

const tool = (sc: Sidecar, name: string, args: string[]) =>
  Bun.spawnSync([join(CONDOR_BIN, name), ...args], { env: { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1" } }).stdout.toString();
const submits = (sc: Sidecar) => sc.calls("condor_submit").length;
async function terminated(sc: Sidecar, p: Json, what: string): Promise<Json> {
  return eventually(
    async () => {
      const st = await sc.statusOf(p.pod);
      return st?.containers?.every((c: Json) => c.state.terminated) ? st : undefined;
    },
    60_000,
    what,
  );
}

const { start, started } = sidecars();
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}, TEARDOWN_TIMEOUT_MS);

/** Starts the sidecar with `config` and checks that it exits 2 saying `message`, having made nothing. */
function expectRefusedAtStart(config: string, message: string): void {
  const dir = mkdtempSync(join(tmpdir(), "sidecar-site-options-"));
  dirs.push(dir);
  writeFileSync(join(dir, "c.yaml"), `DataRootFolder: ./data\n${config}`);
  const p = Bun.spawnSync([process.execPath, sidecarEntry(), "--config", join(dir, "c.yaml"), "--condor-bin", CONDOR_BIN], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", MINICONDOR_HOME: join(dir, "mc") },
  });
  expect(p.exitCode).toBe(2);
  expect(p.stderr.toString()).toContain(message);
  expect(existsSync(join(dir, "data"))).toBe(false);
}

const FLAVORS = `
Submit:
  ExtraLines: {priority: 5}
  AccountingGroups: {physics: group_phys}
Flavors:
  big:
    Cpu: "3"
    Memory: 5Gi
    AccountingGroup: group_big
    ExtraLines: {"+SiteFlavor": '"big"'}
  gpu:
    Gpus: 1
    Requirements: HasGPU =?= true
DefaultFlavor: big
`;

describe("flavors (docs/pod-to-job.md#flavors)", () => {
  test('the issue\'s example: big on a one-container pod gives RequestCpus 3, RequestMemory 5120 and SiteFlavor = "big"', async () => {
    const sc = await start({ config: FLAVORS });
    const p = pod("flavored", { annotations: { "htcondor-job.vk.io/flavor": "big" }, containers: 3 });
    const res = await sc.call("POST", "/create", p);
    expect(res.status).toBe(200);
    const jid = JSON.parse(res.body).PodJID as string;
    const ad = tool(sc, "condor_q", [jid, "-af", "RequestCpus", "RequestMemory", "SiteFlavor", "AcctGroup", "JobPrio"]).trim();
    // Three containers with big get 3 CPUs, not 9.
    expect(ad).toBe("3 5120 big group_big 5");
    expect((await sc.call("POST", "/delete", p.pod)).status).toBe(200);
  }, 90_000);

  test("DefaultFlavor applies without the annotation, the namespace's group wins over the flavor's, and the job runs", async () => {
    const sc = started[0]!;
    const p = pod("default-flavor", { script: "echo ran" });
    p.pod.metadata.namespace = "physics";
    const res = await sc.call("POST", "/create", p);
    expect(res.status).toBe(200);
    const jid = JSON.parse(res.body).PodJID as string;
    expect(tool(sc, "condor_q", [jid, "-af", "RequestCpus", "AcctGroup"]).trim()).toBe("3 group_phys");
    const st = await terminated(sc, p, "the default-flavored pod finished");
    expect(st.containers[0].state.terminated.exitCode).toBe(0);
  }, 90_000);

  test("an unknown flavor is a 400 naming it, and nothing is submitted or left behind", async () => {
    const sc = started[0]!;
    const before = submits(sc);
    const p = pod("typo", { annotations: { "htcondor-job.vk.io/flavor": "bgi" } });
    const res = await sc.call("POST", "/create", p);
    expect(res.status).toBe(400);
    expect(res.body).toContain('no flavor is named "bgi"; this site offers big, gpu');
    expect(res.body.trim().split("\n").length).toBe(1);
    expect(submits(sc)).toBe(before);
    expect(existsSync(join(sc.dataRoot, "pods", p.pod.metadata.uid))).toBe(false);
  }, 30_000);

  test("a bad Flavors map stops the start with exit 2 and the key's path", () => {
    expectRefusedAtStart("Flavors:\n  big:\n    Cpu: lots\n", "c.yaml: Flavors.big.Cpu: is not a Kubernetes quantity");
  }, scaled(60_000));
});

describe("image overrides (docs/pod-to-job.md#image-overrides)", () => {
  test("the runtime gets the site's file, never the pod's reference; the status keeps the pod's image", async () => {
    const images = mkdtempSync(join(tmpdir(), "sidecar-images-"));
    dirs.push(images);
    const sif = join(images, "python-3.12.sif");
    writeFileSync(sif, "");
    const sc = await start({
      config: `ImageOverrides:\n  "docker.io/library/python:3.12-slim": ${sif}\n  "ghcr.io/missing/*": "${images}/nowhere/*"\n`,
    });
    // The shim refuses a path image that does not exist: the job can only succeed with the target.
    const p = pod("overridden", { image: "docker://python:3.12-slim", script: "echo from-override" });
    expect((await sc.call("POST", "/create", p)).status).toBe(200);
    const st = await terminated(sc, p, "the overridden pod finished");
    expect(st.containers[0].state.terminated.exitCode).toBe(0);
    expect(st.containers[0].image).toBe("docker://python:3.12-slim");
    const jobDir = join(sc.dataRoot, "pods", p.pod.metadata.uid);
    for (const f of readdirSync(jobDir).filter((f) => f.endsWith(".sh") || f.endsWith(".sub"))) {
      expect(readFileSync(join(jobDir, f), "utf8")).not.toContain("python:3.12");
    }

    // A prefix entry: the target path with the rest of the reference, as the runtime reports.
    const q = pod("prefixed", { image: "ghcr.io/missing/app:2", script: "echo never" });
    expect((await sc.call("POST", "/create", q)).status).toBe(200);
    const failed = await terminated(sc, q, "the prefixed pod failed");
    expect(failed.containers[0].state.terminated.exitCode).not.toBe(0);
    expect(failed.containers[0].image).toBe("docker://ghcr.io/missing/app:2");
    // The runtime's own words, in the container's status.
    expect(failed.containers[0].state.terminated.reason).toBe("StartError");
    expect(failed.containers[0].state.terminated.message).toContain(`could not open image ${images}/nowhere/app:2:`);
    // What the runtime said, from the wrapper's own log that the job returns (podstate/).
    const wrapperLog = join(sc.dataRoot, "pods", q.pod.metadata.uid, "podstate", "wrapper.log");
    const said = await eventually(() => (existsSync(wrapperLog) ? readFileSync(wrapperLog, "utf8") : undefined), 30_000, "the wrapper's log");
    expect(said).toContain(`could not open image ${images}/nowhere/app:2:`);
    expect(said).not.toContain("ghcr.io/missing");
  }, 120_000);

  test("an override to the host image is refused at start", () => {
    expectRefusedAtStart("ImageOverrides:\n  busybox: host\n", "c.yaml: ImageOverrides.busybox: the target is the host image");
  }, scaled(60_000));
});
