// Symlinks planted by a pod must not decide what is mounted (docs/threat-model.md#1-symlinks-planted-by-the-pod-decide-what-is-mounted), end to end: real
// HTTP to the sidecar, jobs on minicondor, containers under the apptainer shim, whose binds are
// real. Each pod plants a symlink the way a hostile pod author would and mounts through it; the
// container that would have used it must end terminated, reason CreateContainerConfigError, exit
// code 1, with the reason in its message
// (docs/interlink.md#what-the-virtual-kubelet-does-with-a-status), never having run, and nothing
// may appear on the host.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Json, makeCreateRequest } from "../fixtures/pods.ts";
import { eventually, type Sidecar, sidecars, TEARDOWN_TIMEOUT_MS } from "../helpers/sidecar.ts";

let sc: Sidecar;
let n = 0;
const uid = () => `150a0000-0000-4000-8000-${String(++n).padStart(12, "0")}`;

// The "host": a secret folder no pod may see, and the one folder hostPath volumes may use.
const host = mkdtempSync(join(tmpdir(), "isolation-host-"));
const secret = join(host, "secret");
const allowed = join(host, "allowed");
mkdirSync(secret);
writeFileSync(join(secret, "token"), "host secret\n");
mkdirSync(join(allowed, "ok"), { recursive: true });
writeFileSync(join(allowed, "ok/file"), "allowed\n");
symlinkSync(secret, join(allowed, "out")); // a link inside the prefix that leads out of it
const madeByMkdir = join(host, "made-by-mkdir");

const status = async (pod: Json) => {
  const r = await sc.call("GET", "/status", [pod]);
  expect(r.status).toBe(200);
  return (JSON.parse(r.body) as Json[])[0];
};
const finished = (pod: Json) =>
  eventually(
    async () => {
      const s = await status(pod);
      const all = [...(s?.initContainers ?? []), ...(s?.containers ?? [])];
      return all.length && all.every((c: Json) => c.state.terminated) ? s : undefined;
    },
    120_000,
    `pod ${pod.metadata.name} to end`,
  );
const logOf = (pod: Json, container: string) => sc.logs(pod, container);

const container = (name: string, script: string, volumeMounts: Json[]) => ({
  name,
  image: "busybox:1.36",
  command: ["sh", "-c", script],
  resources: {},
  volumeMounts,
});
const shared = { name: "shared", mountPath: "/shared" };

/** Creates a pod, waits for its end, returns its status. */
async function run(name: string, spec: Json): Promise<{ pod: Json; s: Json }> {
  const req = makeCreateRequest({ metadata: { name, uid: uid() }, spec: { restartPolicy: "Never", ...spec } });
  const r = await sc.call("POST", "/create", req);
  expect(r.status).toBe(200);
  const pod = { metadata: req.pod.metadata };
  return { pod, s: await finished(pod) };
}

function expectRefused(s: Json, name: string, why: RegExp): void {
  const c = s.containers.find((x: Json) => x.name === name);
  expect(c?.state.terminated).toMatchObject({ reason: "CreateContainerConfigError", exitCode: 1 });
  expect(c?.state.terminated.message ?? "").toMatch(why);
}

let subPaths: Promise<{ pod: Json; s: Json }>;
let hostPaths: Promise<{ pod: Json; s: Json }>;
let points: Promise<{ pod: Json; s: Json }>;

const { start } = sidecars();
beforeAll(async () => {
  sc = await start({ config: `Channels:\n  HostPathPrefixes: [${JSON.stringify(allowed)}]\n` });
  // 1. An init container plants links in an emptyDir; later containers mount subPaths through them.
  subPaths = run("plant-subpath", {
    volumes: [{ name: "shared", emptyDir: {} }],
    initContainers: [container("plant", `cd /shared && ln -s ${secret} escape && ln -s ../../env envs && ln -s ../../.wrapper control`, [shared])],
    containers: [
      container("escape", "cat /x/token; echo ran > /shared/ran.escape", [shared, { name: "shared", mountPath: "/x", subPath: "escape" }]),
      container("envfile", "cat /x.env; echo ran > /shared/ran.envfile", [shared, { name: "shared", mountPath: "/x.env", subPath: "envs/c.escape.env" }]),
      container("control", "ls /x; echo ran > /shared/ran.control", [shared, { name: "shared", mountPath: "/x", subPath: "control" }]),
    ],
  });
  // 2. hostPath volumes whose strings pass the sidecar's prefix check, through a link inside it.
  hostPaths = run("host-link", {
    volumes: [
      { name: "shared", emptyDir: {} },
      { name: "linked", hostPath: { path: join(allowed, "out") } },
      { name: "prefix", hostPath: { path: allowed } },
    ],
    containers: [
      container("linked", "cat /h/token; echo ran > /shared/ran.linked", [shared, { name: "linked", mountPath: "/h" }]),
      container("subpath", "cat /h/token; echo ran > /shared/ran.subpath", [shared, { name: "prefix", mountPath: "/h", subPath: "out" }]),
      container("fine", "cat /h/file", [shared, { name: "prefix", mountPath: "/h", subPath: "ok" }]),
    ],
  });
  // 3. A mount point whose parent is a symlink: the nested mount's point would be made on the host.
  points = run("plant-point", {
    volumes: [
      { name: "data", emptyDir: {} },
      { name: "inner", emptyDir: {} },
    ],
    initContainers: [container("plant", `ln -s ${host} /data/sub`, [{ name: "data", mountPath: "/data" }])],
    containers: [
      container("nested", "echo ran > /data/ran", [
        { name: "data", mountPath: "/data" },
        { name: "inner", mountPath: "/data/sub/made-by-mkdir" },
      ]),
    ],
  });
}, 60_000);

afterAll(() => {
  rmSync(host, { recursive: true, force: true });
}, TEARDOWN_TIMEOUT_MS);

describe("subPath through a symlink an init container planted", () => {
  test("to a host folder, to another container's env file, to the wrapper's control folder: each refused", async () => {
    const { pod, s } = await subPaths;
    expectRefused(s, "escape", /subPath escape of emptydir\/shared resolves to .*secret, outside its volume/);
    expectRefused(s, "envfile", /subPath envs\/c\.escape\.env of emptydir\/shared resolves to .*\/env\/c\.escape\.env, outside its volume/);
    expectRefused(s, "control", /subPath control of emptydir\/shared resolves to .*\/\.wrapper, outside its volume/);
    for (const name of ["escape", "envfile", "control"]) {
      const log = await logOf(pod, name);
      expect(log.status).toBe(200);
      expect(log.body).toBe("");
    }
    expect(s.initContainers[0].state.terminated).toMatchObject({ exitCode: 0 });
  }, 150_000);
});

describe("hostPath through a symlink inside the allowed prefix", () => {
  test("the volume's own path and a subPath through the link are refused; a plain one inside works", async () => {
    const { pod, s } = await hostPaths;
    expectRefused(s, "linked", /hostPath .*\/allowed\/out resolves to .*\/secret, which is not below an allowed prefix/);
    expectRefused(s, "subpath", /subPath out of .*\/allowed resolves to .*\/secret, outside its volume/);
    expect(s.containers.find((c: Json) => c.name === "fine").state.terminated).toMatchObject({ reason: "Completed", exitCode: 0 });
    expect((await logOf(pod, "fine")).body).toBe("allowed\n");
    for (const name of ["linked", "subpath"]) expect((await logOf(pod, name)).body).toBe("");
  }, 150_000);
});

describe("a mount point whose parent is a symlink", () => {
  test("is refused, and nothing is made on the host", async () => {
    const { s } = await points;
    expectRefused(s, "nested", /cannot make the mount point of \/data\/sub\/made-by-mkdir: .*\/sub is not a plain folder/);
    expect(existsSync(madeByMkdir)).toBe(false);
  }, 150_000);
});
