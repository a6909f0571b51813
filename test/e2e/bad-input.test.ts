// Bad and hostile input over real HTTP (docs/interlink.md#post-create create,
// docs/interlink.md#post-delete delete, docs/interlink.md#get-status status,
// docs/interlink.md#get-getlogs getLogs): every bad request gets a 4xx with one plain-text line,
// nothing is submitted or written outside DataRootFolder, no pod folder is left, and injected text
// never runs (a planted marker command).
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, lstatSync, readdirSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { makeCreateRequest } from "../fixtures/pods.ts";
import { eventually, type HttpResult, measureLoad, scaled, SETUP_TIMEOUT_MS, type Sidecar, sidecars, startSidecar } from "../helpers/sidecar.ts";

// Hooks and tests that start processes have explicit timeouts, scaled by the load measured now
// (test/helpers/sidecar.ts): a process start alone can take bun's default 5 s on a busy machine.
await measureLoad();

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;
let sc: Sidecar;
let marker: string;
let inject: string;
let n = 0;
const uid = () => `4444eeee-0000-4000-8000-${String(++n).padStart(12, "0")}`;

function base(): Json {
  return makeCreateRequest({
    metadata: { name: "victim", uid: uid(), annotations: {} },
    spec: {
      containers: [{ name: "main", image: "busybox", command: ["sh", "-c", "echo ok"], resources: {}, volumeMounts: [{ name: "cfg", mountPath: "/etc/cfg" }] }],
      volumes: [{ name: "cfg", configMap: { name: "cfg" } }],
    },
    container: [{
      name: "main",
      configMaps: [{ metadata: { name: "cfg" }, data: { "app.conf": "x=1" } }],
      secrets: null,
      projectedvolumemaps: null,
      emptyDirs: null,
    }],
  });
}
const main = (r: Json) => r.pod.spec.containers[0];

const { start } = sidecars();
beforeAll(async () => {
  sc = await start({ config: "BodyLimit: 1048576\n" });
  marker = join(sc.dir, "INJECTED");
  inject = `touch ${marker}`;
}, scaled(SETUP_TIMEOUT_MS));

/**
 * POSTs bytes as they are: the helper's `raw` is a JS string, which it encodes as UTF-8, so it
 * cannot send invalid UTF-8.
 */
function postBytes(path: string, bytes: Uint8Array): Promise<HttpResult> {
  return new Promise((res, rej) => {
    const req = request(
      { host: "127.0.0.1", port: sc.port, method: "POST", path, headers: { "content-type": "application/json", "content-length": bytes.byteLength } },
      (r) => {
        const chunks: Buffer[] = [];
        r.on("data", (c: Buffer) => chunks.push(c));
        r.on("end", () => res({ status: r.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8"), headers: r.headers }));
      },
    );
    req.on("error", rej);
    req.end(Buffer.from(bytes));
  });
}

/** Every file and folder under `dir` (relative path → type, size, mode, mtime), minus `skip`. */
function snapshot(dir: string, skip: (rel: string) => boolean, rel = ""): Map<string, string> {
  const out = new Map<string, string>();
  for (const name of readdirSync(join(dir, rel))) {
    const r = rel ? `${rel}/${name}` : name;
    if (skip(r)) continue;
    const st = lstatSync(join(dir, r));
    out.set(r, `${st.isDirectory() ? "d" : "f"} ${st.isDirectory() ? 0 : st.size} ${st.mode.toString(8)} ${st.mtimeMs}`);
    if (st.isDirectory()) { for (const [k, v] of snapshot(dir, skip, r)) out.set(k, v); }
  }
  return out;
}
/** Outside DataRootFolder (and the emulator's own home), plus DataRootFolder but its state store. */
const unchangedByRequests = (rel: string) => rel === "minicondor" || /^data\/state\.db(-wal|-shm|-journal)?$/.test(rel);

function expectOneLineReason(res: HttpResult): void {
  expect(res.status).toBeGreaterThanOrEqual(400);
  expect(res.status).toBeLessThan(500);
  expect(String(res.headers["content-type"])).toMatch(/^text\/plain/);
  expect(res.body.endsWith("\n")).toBe(true);
  expect(res.body.trimEnd()).not.toContain("\n");
  expect(res.body.length).toBeGreaterThan(10);
}

function expectNothingDone(): void {
  expect(sc.calls().map((c) => c.tool)).not.toContain("condor_submit");
  const pods = join(sc.dataRoot, "pods");
  expect(existsSync(pods) ? readdirSync(pods) : []).toEqual([]);
  expect(existsSync(marker)).toBe(false);
}

/** [name, mutation of a valid create request (or a raw body, or raw bytes), expected status] */
type Case = [string, ((r: Json) => void) | { raw: string } | { bytes: Uint8Array }, number?];
const cases = (): Case[] => [
  ["malformed JSON", { raw: '{"pod": {' }],
  // 0xff can never appear in UTF-8 (a JS string "\xff" would go out as the valid bytes c3 bf).
  ["invalid UTF-8", { bytes: new Uint8Array([...new TextEncoder().encode('{"pod": "'), 0xff, 0xfe, ...new TextEncoder().encode('"}')]) }],
  ["body is an array", { raw: "[]" }],
  ["body is a string", { raw: '"pod"' }],
  ["body is a number", { raw: "42" }],
  ["pod missing", (r) => delete r.pod],
  ["pod.metadata missing", (r) => delete r.pod.metadata],
  ["metadata.uid missing", (r) => delete r.pod.metadata.uid],
  ["metadata.name missing", (r) => delete r.pod.metadata.name],
  ["metadata.namespace missing", (r) => delete r.pod.metadata.namespace],
  ["metadata.name is a number", (r) => (r.pod.metadata.name = 7)],
  ["uid with a slash", (r) => (r.pod.metadata.uid = "../../etc")],
  ["uid with a NUL", (r) => (r.pod.metadata.uid = "abc\u0000def")],
  ["pod name with capitals", (r) => (r.pod.metadata.name = "Victim")],
  ["pod name with a slash", (r) => (r.pod.metadata.name = "a/b")],
  ["pod name of 254 characters", (r) => (r.pod.metadata.name = "a".repeat(254))],
  ["pod name containing ..", (r) => (r.pod.metadata.name = "a..b")],
  ["namespace with a dot", (r) => (r.pod.metadata.namespace = "a.b")],
  ["namespace with shell text", (r) => (r.pod.metadata.namespace = `$(${inject})`)],
  ["container name with an underscore", (r) => (main(r).name = "main_1")],
  ["container name with a NUL", (r) => (main(r).name = "ma\u0000in")],
  ["duplicate container names", (r) => r.pod.spec.containers.push({ ...main(r) })],
  ["init container named like a container", (r) => (r.pod.spec.initContainers = [{ name: "main", image: "busybox", resources: {} }])],
  ["containers is not an array", (r) => (r.pod.spec.containers = { name: "main" })],
  ["empty image", (r) => (main(r).image = "")],
  ["image with a newline", (r) => (main(r).image = `busybox\n${inject}`)],
  ["command is a string", (r) => (main(r).command = `sh -c ${inject}`)],
  ["args with a number", (r) => (main(r).args = ["a", 1])],
  // Kubernetes allows any printable ASCII but '=' in env names (KEP-4369): only those are refused.
  ["env name with '='", (r) => (main(r).env = [{ name: "A=B", value: "x" }])],
  ["env name with '=' and shell text", (r) => (main(r).env = [{ name: `X=$(${inject})`, value: "x" }])],
  ["env name with a newline", (r) => (main(r).env = [{ name: `X\n${inject}`, value: "x" }])],
  ["env value with a NUL", (r) => (main(r).env = [{ name: "A", value: "a\u0000b" }])],
  ["unresolvable secretKeyRef", (r) => (main(r).env = [{ name: "PW", valueFrom: { secretKeyRef: { name: "nope", key: "pw" } } }])],
  ["unknown fieldRef path", (r) => (main(r).env = [{ name: "X", valueFrom: { fieldRef: { fieldPath: "spec.bogus" } } }])],
  ["empty mountPath", (r) => (main(r).volumeMounts[0].mountPath = "")],
  ["mountPath with ..", (r) => (main(r).volumeMounts[0].mountPath = "/etc/../root")],
  ["mountPath with a colon", (r) => (main(r).volumeMounts[0].mountPath = "/etc/cfg:/root")],
  ["mountPath with a comma", (r) => (main(r).volumeMounts[0].mountPath = "/a,/b")],
  ["mountPath with a double quote", (r) => (main(r).volumeMounts[0].mountPath = '/etc/"cfg"')],
  ["subPath with a colon", (r) => (main(r).volumeMounts[0].subPath = "a:b")],
  ["mount of an undeclared volume", (r) => (main(r).volumeMounts[0].name = "ghost")],
  ["subPath escaping the volume", (r) => (main(r).volumeMounts[0].subPath = "../../..")],
  ["absolute subPath", (r) => (main(r).volumeMounts[0].subPath = "/etc/shadow")],
  ["configMap key with ../", (r) => (r.container[0].configMaps[0].data = { "../escape": "x" })],
  ["configMap key with shell text", (r) => (r.container[0].configMaps[0].data = { [`$(${inject})`]: "x" })],
  ["volume name that is not a DNS label", (r) => ((r.pod.spec.volumes[0].name = "Cfg_1"), (main(r).volumeMounts[0].name = "Cfg_1"))],
  [
    "secret key with ../",
    (r) => {
      r.pod.spec.volumes[0] = { name: "cfg", secret: { secretName: "s" } };
      r.container[0].secrets = [{ metadata: { name: "s" }, data: { "../escape": "eA==" } }];
    },
  ],
  [
    "secret items absolute path",
    (r) => {
      r.pod.spec.volumes[0] = { name: "cfg", secret: { secretName: "s", items: [{ key: "k", path: "/etc/shadow" }] } };
      r.container[0].secrets = [{ metadata: { name: "s" }, data: { k: "eA==" } }];
    },
  ],
  ["items path with ../", (r) => (r.pod.spec.volumes[0].configMap.items = [{ key: "app.conf", path: "../../outside" }])],
  ["absolute items path", (r) => (r.pod.spec.volumes[0].configMap.items = [{ key: "app.conf", path: "/etc/passwd" }])],
  ["persistentVolumeClaim volume", (r) => (r.pod.spec.volumes[0] = { name: "cfg", persistentVolumeClaim: { claimName: "data" } })],
  ["nfs volume", (r) => (r.pod.spec.volumes[0] = { name: "cfg", nfs: { server: "x", path: "/" } })],
  ["hostPath while hostPath is switched off", (r) => (r.pod.spec.volumes[0] = { name: "cfg", hostPath: { path: "/etc" } })],
  ["invalid cpu quantity", (r) => (main(r).resources = { limits: { cpu: "lots" } })],
  ["invalid memory quantity", (r) => (main(r).resources = { requests: { memory: "1GG" } })],
  ["negative memory", (r) => (main(r).resources = { requests: { memory: "-1Gi" } })],
  ["grpc probe", (r) => (main(r).livenessProbe = { grpc: { port: 9000 } })],
  ["restartPolicy Sometimes", (r) => (r.pod.spec.restartPolicy = "Sometimes")],
  ["submit-options outside the allowlist", (r) => (r.pod.metadata.annotations["htcondor-job.vk.io/submit-options"] = "executable = /bin/evil")],
  ["submit-options smuggling a second line", (r) => (r.pod.metadata.annotations["htcondor-job.vk.io/submit-options"] = "priority = 1\n+Requirements = true")],
  ["singularity-options while switched off", (r) => (r.pod.metadata.annotations["htcondor-job.vk.io/singularity-options"] = "--writable")],
  ["host image while switched off", (r) => (main(r).image = "host")],
  ["oversized body", { raw: JSON.stringify({ pad: "x".repeat(2 * 1024 * 1024) }) }, 413],
];

describe("bad input: 4xx, one line, nothing submitted, nothing left behind", () => {
  const table = cases();
  let before: Map<string, string>;
  beforeAll(() => {
    before = snapshot(sc.dir, unchangedByRequests);
  }, scaled(SETUP_TIMEOUT_MS));
  test(`the table has at least 40 cases (${table.length})`, () => expect(table.length).toBeGreaterThanOrEqual(40), scaled(60_000));
  for (const [name, mutate, want] of table) {
    test(name, async () => {
      let res;
      if (typeof mutate === "function") {
        const r = base();
        mutate(r);
        res = await sc.call("POST", "/create", r);
      } else if ("bytes" in mutate) {
        res = await postBytes("/create", mutate.bytes);
      } else {
        res = await sc.call("POST", "/create", undefined, { raw: mutate.raw });
      }
      if (want) expect(res.status).toBe(want);
      expectOneLineReason(res);
      expectNothingDone();
    }, scaled(60_000));
  }
  // docs/interlink.md#get-status (status takes a list of pods), docs/interlink.md#get-getlogs
  // (getLogs one object), docs/interlink.md#post-delete (delete one pod).
  test.each(
    [
      ["a /status body that is an object", "GET", "/status", { metadata: {} }],
      ["a /getLogs body that is an array", "GET", "/getLogs", []],
      ["a /delete body that is a string", "POST", "/delete", "nope"],
    ] as const,
  )("other endpoints: %s", async (_, method, path, body) => {
    const res = await sc.call(method, path, body);
    expect(res.status).toBe(400);
    expectOneLineReason(res);
    expectNothingDone();
  }, scaled(60_000));
  test("after all of them: nothing written anywhere in the sidecar's folder but its state store", () => {
    expectNothingDone();
    expect(before.has("SidecarConfig.yaml") && before.has("data")).toBe(true);
    const after = snapshot(sc.dir, unchangedByRequests);
    expect([...after.keys()].filter((k) => !before.has(k))).toEqual([]);
    expect([...before].filter(([k, v]) => after.get(k) !== v).map(([k]) => k)).toEqual([]);
  }, scaled(60_000));
});

describe("hostile but valid input is data, never code", () => {
  test("shell text in env names and values, args, workingDir, image, annotations, mount paths and submit options never runs", async () => {
    const payloads = [`$(${inject})`, `\`${inject}\``, `; ${inject}`, `' ; ${inject}; '`, `" ; ${inject}; "`, `\n${inject}\n`];
    const reqs: Json[] = [];
    const expected: string[] = [];
    for (const [i, p] of payloads.entries()) {
      const line = p.replace(/\n/g, " ");
      const r = base();
      r.pod.metadata.name = `hostile-${i}`;
      r.pod.metadata.annotations = { note: p, "htcondor-job.vk.io/submit-options": `priority = ${line}` };
      // Kubernetes takes any image string without control characters or outer whitespace.
      main(r).image = `busybox${line.trimEnd()}`;
      // Any printable ASCII but '=' is a valid env name (KEP-4369).
      const oddName = `X${line.replaceAll("=", "")}`;
      // bash, not sh: dash does not pass variables whose names are not identifiers to its children.
      main(r).command = ["bash", "-c", 'printf "%s|%s|%s|%s|%s" "$1" "$V" "$N" "$(printenv "$2")" "$PWD"', "argv0", p, oddName];
      main(r).env = [
        { name: "V", value: p },
        { name: "N", valueFrom: { fieldRef: { fieldPath: "metadata.annotations['note']" } } },
        { name: oddName, value: p },
      ];
      // Apptainer's --bind cannot express ':', ',' or '"' (refused at create, tested above).
      const dir = `/etc/cfg ${p.replace(/[\n:,"]/g, " ").replace(/\.\./g, "")}`.replace(/\s+$/, "");
      main(r).volumeMounts[0].mountPath = dir;
      // A workingDir that exists in the container: the mount point.
      main(r).workingDir = dir;
      reqs.push(r);
      // $(printenv …) drops trailing newlines, as command substitution does.
      expected.push(`${p}|${p}|${p}|${p.replace(/\n+$/, "")}|${dir}`);
    }
    const answers = await Promise.all(reqs.map((r) => sc.call("POST", "/create", r)));
    // All of them are valid pods: each is accepted and runs.
    expect(answers.map((a) => [a.status, a.status === 200 ? "" : a.body])).toEqual(answers.map(() => [200, ""]));
    for (const [i, r] of reqs.entries()) {
      const st = await eventually(
        async () => {
          const st = await sc.statusOf(r.pod);
          return st?.containers[0].state.terminated ? st : undefined;
        },
        90_000,
        `hostile-${i} to finish`,
      );
      expect(st.containers[0].state.terminated.exitCode).toBe(0);
      const log = await sc.call("GET", "/getLogs", {
        Namespace: "default",
        PodUID: r.pod.metadata.uid,
        PodName: r.pod.metadata.name,
        ContainerName: "main",
        Opts: {},
      });
      // Byte for byte (the log is line-based: newlines in the payload show as line breaks).
      const printed = expected[i]!;
      expect(log.body).toBe(printed.endsWith("\n") ? printed : `${printed}\n`);
    }
    expect(existsSync(marker)).toBe(false);
  }, 180_000);
});

describe("deliberate code channels: refused when off, working when on", () => {
  test("pre-exec off → 400; host image on → runs on the worker", async () => {
    const s2 = await startSidecar({ config: "Channels:\n  PreExec: false\n  HostImage: true\n" });
    try {
      const r = base();
      r.pod.metadata.annotations["slurm-job.vk.io/pre-exec"] = "echo hi";
      const refused = await s2.call("POST", "/create", r);
      expect(refused.status).toBe(400);
      expect(refused.body).toMatch(/pre-exec is disabled/);
      const h = base();
      main(h).image = "host";
      main(h).command = ["/bin/sh", "-c", "echo on-the-host"];
      delete main(h).volumeMounts;
      delete h.pod.spec.volumes;
      expect((await s2.call("POST", "/create", h)).status).toBe(200);
      await eventually(
        async () => {
          const st = (JSON.parse((await s2.call("GET", "/status", [h.pod])).body) as Json[])[0];
          return st?.containers[0].state.terminated?.exitCode === 0 ? true : undefined;
        },
        60_000,
        "host pod",
      );
    } finally {
      await s2.destroy();
    }
  }, 90_000);
});
