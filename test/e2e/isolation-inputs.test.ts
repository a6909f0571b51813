// docs/threat-model.md#the-defences-class-by-class, classes 5, 6 and 7, over real HTTP to a real sidecar on minicondor: a hostile pod
// author attacks what a create's reason shows and what reaches the submit file. Each refusal is a
// 4xx (400) with a one-line reason that names the field, shows no secret or configMap data, and
// leaves nothing behind: no job, no pod folder, no record (docs/interlink.md#post-create create,
// docs/interlink.md#get-status status).
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { b64, makeCreateRequest } from "../fixtures/pods.ts";
import { CONDOR_BIN, type HttpResult, measureLoad, scaled, SETUP_TIMEOUT_MS, type Sidecar, sidecars, startSidecar } from "../helpers/sidecar.ts";

// Hooks and tests that start processes have explicit timeouts, scaled by the load measured now
// (test/helpers/sidecar.ts): a process start alone can take bun's default 5 s on a busy machine.
await measureLoad();

// deno-lint-ignore no-explicit-any -- response bodies are read loosely, as interLink reads them
type Json = any;
let sc: Sidecar;
let n = 0;
const uid = () => `5555ffff-0000-4000-8000-${String(++n).padStart(12, "0")}`;
/** Text a reason may not hold anywhere but its final newline (docs/threat-model.md#7-reasons-on-one-line-by-unicodes-rules). */
const CONTROL_OR_LINE_BREAK = /[\p{Cc}\p{Zl}\p{Zp}]/u;

const { start } = sidecars();
beforeAll(async () => {
  sc = await start();
}, scaled(SETUP_TIMEOUT_MS));

/** A valid one-container pod; `c` changes the container, `container` replaces the request's data. */
function pod(name: string, c: Json = {}, more: { volumes?: Json[]; annotations?: Record<string, string>; container?: Json[] } = {}): Json {
  return makeCreateRequest({
    metadata: { name, uid: uid(), annotations: more.annotations ?? {} },
    spec: { containers: [{ name: "main", image: "busybox", command: ["sh", "-c", "true"], resources: {}, ...c }], volumes: more.volumes ?? null },
    container: more.container ?? [{ name: "main", configMaps: null, secrets: null, projectedvolumemaps: null, emptyDirs: null }],
  });
}
const secretObject = (name: string, data: Record<string, string>) => ({
  metadata: { name },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
});
const dataOf = (d: { secrets?: Json[]; configMaps?: Json[]; projected?: Json[] }) => [
  { name: "main", configMaps: d.configMaps ?? null, secrets: d.secrets ?? null, projectedvolumemaps: d.projected ?? null, emptyDirs: null },
];
const emptyDir = [{ name: "scratch", emptyDir: {} }];
const callsOf = (tool: string) => sc.calls(tool).length;
/** The jobs the emulator's schedd holds, in the queue or in the history: all, or one pod's. */
function jobsKnown(podUid?: string): string {
  const env = { MINICONDOR_HOME: sc.home, MINICONDOR_ALLOW_ROOT: "1", PATH: process.env.PATH ?? "/usr/bin:/bin" };
  const which = podUid === undefined ? [] : ["-constraint", `InterLinkPodUID == "${podUid}"`];
  const q = Bun.spawnSync([join(CONDOR_BIN, "condor_q"), ...which, "-af", "ClusterId"], { env }).stdout.toString();
  const h = Bun.spawnSync([join(CONDOR_BIN, "condor_history"), ...which, "-af", "ClusterId"], { env }).stdout.toString();
  return (q + h).trim();
}

/** 400, plain text, one line by Unicode's rules, naming `field`. */
function expectReason(res: HttpResult, field: string): void {
  expect([res.status, res.body]).toEqual([400, expect.any(String)]);
  expect(String(res.headers["content-type"])).toMatch(/^text\/plain/);
  expect(res.body.endsWith("\n")).toBe(true);
  expect(res.body.slice(0, -1)).not.toMatch(CONTROL_OR_LINE_BREAK);
  expect(res.body).toContain(field);
}

/** Neither the reason nor the sidecar's log shows a secret, in any spelling a reason could use. */
function expectNoneShown(res: HttpResult, secrets: string[]): void {
  for (const s of secrets) {
    for (const form of [s, JSON.stringify(s).slice(1, -1), b64(s)]) {
      expect(res.body).not.toContain(form);
      expect(sc.log()).not.toContain(form);
    }
  }
}

/** Nothing queued, no pod folder, no record the status call could find. */
async function expectNothingLeft(r: Json): Promise<void> {
  expect(jobsKnown(r.pod.metadata.uid)).toBe("");
  expect(existsSync(join(sc.dataRoot, "pods", r.pod.metadata.uid))).toBe(false);
  const st = await sc.call("GET", "/status", [r.pod]);
  expect(st.status).toBe(200);
  expect(JSON.parse(st.body)).toEqual([]);
}

/** Creates `r`: a 400 naming `field`, no secret shown, nothing submitted (no condor_submit call at all), nothing left. */
async function expectRefusedBeforeSubmit(r: Json, field: string, secrets: string[] = []): Promise<HttpResult> {
  const submits = callsOf("condor_submit");
  const res = await sc.call("POST", "/create", r);
  expectReason(res, field);
  expectNoneShown(res, secrets);
  expect(callsOf("condor_submit")).toBe(submits);
  await expectNothingLeft(r);
  return res;
}

// ---------------------------------------------------------------------------------------------
// Class 5: a reason never shows what came from a secret or a configMap

describe("class 5: reasons never show secret or configMap data", () => {
  test("a secretKeyRef env expanded into subPathExpr that escapes the volume", async () => {
    const secret = "../s3cr3t-A-escape";
    const r = pod("sec-subpath", {
      env: [{ name: "S", valueFrom: { secretKeyRef: { name: "creds", key: "pw" } } }],
      volumeMounts: [{ name: "scratch", mountPath: "/x", subPathExpr: "$(S)" }],
    }, { volumes: emptyDir, container: dataOf({ secrets: [secretObject("creds", { pw: secret })] }) });
    const res = await expectRefusedBeforeSubmit(r, "spec.containers[0].volumeMounts[0].subPathExpr", [secret, "s3cr3t-A"]);
    expect(res.body).toContain("must not contain '..'");
  }, scaled(60_000));

  test("a secretKeyRef env expanded into subPathExpr with a character --bind cannot carry", async () => {
    const secret = "s3cr3t-B:with-colon";
    const r = pod("sec-colon", {
      env: [{ name: "S", valueFrom: { secretKeyRef: { name: "creds", key: "pw" } } }],
      volumeMounts: [{ name: "scratch", mountPath: "/x", subPathExpr: "sub/$(S)" }],
    }, { volumes: emptyDir, container: dataOf({ secrets: [secretObject("creds", { pw: secret })] }) });
    const res = await expectRefusedBeforeSubmit(r, "spec.containers[0].volumeMounts[0].subPathExpr", [secret, "s3cr3t-B"]);
    expect(res.body).toContain("must not contain ':'");
  }, scaled(60_000));

  test("a secret with a line break expanded into subPathExpr (the wrapper's bind check would have quoted it)", async () => {
    const secret = "s3cr3t-C\nsecond-line";
    const r = pod("sec-newline", {
      env: [{ name: "S", valueFrom: { secretKeyRef: { name: "creds", key: "pw" } } }],
      volumeMounts: [{ name: "scratch", mountPath: "/x", subPathExpr: "$(S)" }],
    }, { volumes: emptyDir, container: dataOf({ secrets: [secretObject("creds", { pw: secret })] }) });
    await expectRefusedBeforeSubmit(r, "spec.containers[0].volumeMounts[0].subPathExpr", [secret, "s3cr3t-C", "second-line"]);
  }, scaled(60_000));

  test("a configMapKeyRef env expanded into subPathExpr", async () => {
    const value = "/c0nfig-D-absolute";
    const r = pod("cm-subpath", {
      env: [{ name: "C", valueFrom: { configMapKeyRef: { name: "settings", key: "dir" } } }],
      volumeMounts: [{ name: "scratch", mountPath: "/x", subPathExpr: "$(C)" }],
    }, { volumes: emptyDir, container: dataOf({ configMaps: [{ metadata: { name: "settings" }, data: { dir: value } }] }) });
    await expectRefusedBeforeSubmit(r, "spec.containers[0].volumeMounts[0].subPathExpr", [value, "c0nfig-D"]);
  }, scaled(60_000));

  test("envFrom a secret, expanded into subPathExpr", async () => {
    const secret = "../s3cr3t-E";
    const r = pod("envfrom-subpath", {
      envFrom: [{ secretRef: { name: "bag" } }],
      volumeMounts: [{ name: "scratch", mountPath: "/x", subPathExpr: "$(TOKEN_E)" }],
    }, { volumes: emptyDir, container: dataOf({ secrets: [secretObject("bag", { TOKEN_E: secret })] }) });
    await expectRefusedBeforeSubmit(r, "spec.containers[0].volumeMounts[0].subPathExpr", [secret, "s3cr3t-E"]);
  }, scaled(60_000));

  // A key is named, a value never: Kubernetes shows keys to whoever may describe the object, and
  // the variable made from one must be named to say what to fix (class 3).
  test("envFrom a secret whose value holds NUL", async () => {
    const r = pod("envfrom-nul", { envFrom: [{ prefix: "P_", secretRef: { name: "bag" } }] }, {
      container: dataOf({ secrets: [secretObject("bag", { S3CR3T_KEY_F: "s3cr3t-F\u0000tail" })] }),
    });
    const res = await expectRefusedBeforeSubmit(r, "spec.containers[0].envFrom[0]", ["s3cr3t-F", "tail"]);
    expect(res.body).toContain("P_S3CR3T_KEY_F");
  }, scaled(60_000));

  test("envFrom a secret whose value is not UTF-8", async () => {
    const value = "s3cr3t-G\xff\xfe";
    const r = pod("envfrom-utf8", { envFrom: [{ secretRef: { name: "bag" } }] }, {
      container: dataOf({ secrets: [{ metadata: { name: "bag" }, data: { S3CR3T_KEY_G: btoa(value) } }] }),
    });
    const res = await expectRefusedBeforeSubmit(r, "spec.containers[0].envFrom[0]", ["s3cr3t-G", btoa(value)]);
    expect(res.body).toContain("S3CR3T_KEY_G");
  }, scaled(60_000));

  test("a secretKeyRef env expanded into command", async () => {
    // A name that is not a shell identifier reaches the container through `env NAME=value
    // <command>`, so the command's first word must not hold '=' (checkEnvCarriage).
    const secret = "s3cr3t-H=value";
    const r = pod("sec-command", {
      command: ["$(S)", "-c", "true"],
      env: [{ name: "S", valueFrom: { secretKeyRef: { name: "creds", key: "pw" } } }, { name: "odd-name", value: "1" }],
    }, { container: dataOf({ secrets: [secretObject("creds", { pw: secret })] }) });
    await expectRefusedBeforeSubmit(r, "spec.containers[0].command[0]", [secret, "s3cr3t-H"]);
  }, scaled(60_000));

  test("a secret key that is no file name", async () => {
    const r = pod("sec-key", {}, { container: dataOf({ secrets: [{ metadata: { name: "s" }, data: { "key I": b64("s3cr3t-I") } }] }) });
    const res = await expectRefusedBeforeSubmit(r, "container[0].secrets[0].data", ["s3cr3t-I"]);
    expect(res.body).toContain('"key I"');
  }, scaled(60_000));

  test("two keys of a projected volume that collide as files", async () => {
    const r = pod("proj-collide", { volumeMounts: [{ name: "kube-api", mountPath: "/var/run/secrets" }] }, {
      volumes: [{ name: "kube-api", projected: { sources: [{ secret: { name: "tok" } }] } }],
      container: dataOf({ projected: [{ metadata: { name: "kube-api" }, data: { "key-J": "s3cr3t-J1", "key-J/inner": "s3cr3t-J2" } }] }),
    });
    await expectRefusedBeforeSubmit(r, "container[0].projectedvolumemaps[0].data", ["s3cr3t-J1", "s3cr3t-J2"]);
  }, scaled(60_000));
});

// ---------------------------------------------------------------------------------------------
// Class 6: nothing the pod writes reaches another line of the submit file; condor_submit's
// refusal of the pod's own options is the pod's error
// (docs/htcondor.md#submitting-many-pods-at-once;
// docs/htcondor.md#condor_submit-exit-codes-and-errors, docs/htcondor.md#submit-file-rules)

const SUBMIT_FIELD = 'metadata.annotations["htcondor-job.vk.io/submit-options"]';
const withOptions = (name: string, text: string) => pod(name, {}, { annotations: { "htcondor-job.vk.io/submit-options": text } });

describe("class 6: submit values stay on their line; the pod's own refused options are a 400", () => {
  test.each([
    ["a trailing backslash", "rank = 1 \\"],
    ["a backslash followed by spaces", "rank = 1 \\   "],
    ["a backslash on a line that another follows", "rank = 1 \\\npriority = 2"],
    ["a backslash before CR LF", "priority = 2 \\\r\nrank = 1"],
  ])("%s never reaches the submit file", async (_, text) => {
    const res = await expectRefusedBeforeSubmit(withOptions("bs", text), SUBMIT_FIELD);
    expect(res.body).toContain("which would continue it onto the next line");
  }, scaled(60_000));

  test.each([
    ["a rank that does not parse", "rank = (1 +", "Parse error in expression"],
    ["$ENV(HOME), kept literal by $(DOLLAR), is no expression", "rank = $ENV(HOME)", "Parse error in expression"],
    ["a request_disk that is no expression", "rank = Memory\nrequest_disk = (", "request_disk"],
  ])("%s: 400 with condor_submit's words, no job, nothing left", async (_, text, words) => {
    const r = withOptions("refused", text);
    const submits = callsOf("condor_submit");
    const res = await sc.call("POST", "/create", r);
    expectReason(res, SUBMIT_FIELD);
    expect(res.body).toContain("condor_submit refused the pod's submit options: ERROR");
    expect(res.body).toContain(words);
    expect(res.body).not.toContain(process.env.HOME ?? "/root");
    expect(callsOf("condor_submit")).toBe(submits + 1);
    await expectNothingLeft(r);
  }, scaled(60_000));

  test("the schedd down while the pod sets options: still 503, HTCondor's side", async () => {
    writeFileSync(join(sc.home, "faults.json"), JSON.stringify({ scheddDown: true }));
    try {
      const r = withOptions("down", "rank = Memory");
      const res = await sc.call("POST", "/create", r);
      expect(res.status).toBe(503);
      expect(res.body).toContain("Can't find address of local schedd");
      await expectNothingLeft(r);
    } finally {
      writeFileSync(join(sc.home, "faults.json"), "{}");
    }
  }, scaled(60_000));

  test("the sidecar's and the site's own lines are trusted: a refused site line is 503, not the pod's error", async () => {
    const site = await startSidecar({ config: 'Submit:\n  ExtraLines:\n    "+SiteBroken": "(1 +"\n' });
    try {
      const r = pod("site-broken");
      const res = await site.call("POST", "/create", r);
      expect(res.status).toBe(503);
      expect(res.body).toContain("condor_submit exited with 1");
    } finally {
      await site.destroy();
    }
  }, 30_000);
});

// ---------------------------------------------------------------------------------------------
// Class 7: one-line reasons by Unicode's rules

describe("class 7: U+2028, U+2029 and U+0085 never break a reason", () => {
  test.each([
    ["a pod name with U+2028", (r: Json) => (r.pod.metadata.name = "web\u2028evil"), "metadata.name"],
    ["a namespace with U+2029", (r: Json) => (r.pod.metadata.namespace = "ns\u2029evil"), "metadata.namespace"],
    ["a container name with U+0085", (r: Json) => (r.pod.spec.containers[0].name = "main\u0085evil"), "spec.containers[0].name"],
    ["an env name with U+2028", (r: Json) => (r.pod.spec.containers[0].env = [{ name: "A\u2028B", value: "1" }]), "spec.containers[0].env[0].name"],
    ["an image with U+2029", (r: Json) => (r.pod.spec.containers[0].image = "busybox\u2029evil"), "spec.containers[0].image"],
    [
      "a submit-options annotation with U+2028",
      (r: Json) => (r.pod.metadata.annotations["htcondor-job.vk.io/submit-options"] = "pri\u2028ority = 1"),
      SUBMIT_FIELD,
    ],
    [
      "an httpGet probe path with U+0085",
      (r: Json) => (r.pod.spec.containers[0].readinessProbe = { httpGet: { path: "/ok\u0085evil", port: 80 } }),
      "readinessProbe.httpGet.path",
    ],
    [
      "a configMap name with U+2028",
      (
        r: Json,
      ) => ((r.pod.spec.volumes = [{ name: "v", configMap: { name: "cm\u2028evil" } }]),
        (r.pod.spec.containers[0].volumeMounts = [{ name: "v", mountPath: "/v" }])),
      "spec.volumes[0].configMap.name",
    ],
    // The resource name is a key of the path the reason names.
    [
      "a resource name with U+2029",
      (r: Json) => (r.pod.spec.containers[0].resources = { limits: { "vendor.example/gpu\u2029evil": "lots" } }),
      "spec.containers[0].resources.limits[",
    ],
  ])("%s", async (_, mutate, field) => {
    const r = pod("unicode");
    mutate(r);
    const res = await expectRefusedBeforeSubmit(r, field);
    // The character is shown escaped, so the reason still says what was wrong.
    expect(res.body).toMatch(/\\u(2028|2029|0085)/);
  }, scaled(60_000));
});

test("class 7: a body that is not JSON, with U+2028 where the parser stops: the parser's words are one line too", async () => {
  const submits = callsOf("condor_submit");
  const pods = join(sc.dataRoot, "pods");
  const before = existsSync(pods) ? readdirSync(pods) : [];
  const res = await sc.call("POST", "/create", undefined, { raw: "\u2028{" });
  expectReason(res, "the body is not valid JSON");
  expect(callsOf("condor_submit")).toBe(submits);
  expect(existsSync(pods) ? readdirSync(pods) : []).toEqual(before);
}, scaled(60_000));

describe("after all of them", () => {
  test("nothing was submitted and nothing is left in the data folder but the state store", () => {
    expect(jobsKnown()).toBe("");
    // The folders the sidecar makes at start (pods/, and events/ for the shared job event log,
    // docs/status.md#following-the-event-log) stay empty; the file `schedd` says whose pods the
    // folder holds (docs/schedds.md#each-data-folder-holds-one-schedds-pods).
    expect(readdirSync(sc.dataRoot).filter((e) => !/^state\.db(-wal|-shm|-journal)?$/.test(e) && !["pods", "events", "schedd"].includes(e))).toEqual([]);
    for (const folder of ["pods", "events"]) {
      const at = join(sc.dataRoot, folder);
      expect([folder, existsSync(at) ? readdirSync(at) : []]).toEqual([folder, []]);
    }
  }, scaled(60_000));
});
