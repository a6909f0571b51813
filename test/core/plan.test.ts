// docs/interlink.md#the-create-request (create request), docs/interlink.md#volume-data (mounts →
// data), docs/interlink.md#annotations (annotations); docs/pod-to-job.md (every pod feature), docs/interlink.md#how-interlink-treats-responses ("Bad
// input" (refused channels, unresolvable valueFrom, unknown volume types).
import { describe, expect, test } from "bun:test";
import { parseCreateRequest } from "../../src/core/pod.ts";
import { planJob } from "../../src/core/plan.ts";
import { encodeEnvFile } from "../../src/core/plan/env.ts";
import { expandK8s } from "../../src/core/plan/expand.ts";
import { parseSubmitOptions } from "../../src/core/plan/submit-options.ts";
import type { ContainerPlan, JobPlan, PlanConfig } from "../../src/core/types.ts";
import { gpuFlags } from "../../src/render/wrapper.ts";
import { richPlanConfig, testPlanConfig } from "../fixtures/config.ts";
import {
  b64,
  changed,
  configMapObject,
  dataEntry,
  expectInvalid,
  type Json,
  makeCreateRequest,
  RICH_CA,
  RICH_TOKEN,
  RICH_UID,
  richCreateRequest,
  secretObject,
} from "../fixtures/pods.ts";

const text = new TextDecoder();

function plan(body: Json, cfg: Partial<PlanConfig> = {}): JobPlan {
  return planJob(parseCreateRequest(body), testPlanConfig(cfg));
}
function rich(cfg: Partial<PlanConfig> = {}): JobPlan {
  return planJob(parseCreateRequest(richCreateRequest()), richPlanConfig(cfg));
}
function fileText(p: JobPlan, path: string): string | undefined {
  const f = p.files.find((x) => x.path === path);
  return f && text.decode(f.content);
}
function only(p: JobPlan): ContainerPlan {
  return p.containers[0]!;
}
/** A one-container pod with `container` fields merged in, plus optional volumes and data. */
function pod1(container: Json, extra: { volumes?: Json[]; data?: Json; metadata?: Json; spec?: Json; status?: Json } = {}): Json {
  return makeCreateRequest({
    metadata: extra.metadata,
    status: extra.status,
    spec: {
      containers: [{ name: "main", image: "busybox", ...container }],
      ...(extra.volumes ? { volumes: extra.volumes } : {}),
      ...extra.spec,
    },
    container: [dataEntry("main", extra.data ?? {})],
  });
}

describe("identity and site settings", () => {
  test("uid, names, sidecar id, batch name, runtime and flags come through", () => {
    const p = plan(makeCreateRequest(), {
      sidecarId: "site-7",
      dummyJob: true,
      commandPrefix: "source /etc/profile",
      containerRuntime: "/usr/bin/apptainer",
      runtimeSearchPath: ["/opt/apptainer/bin"],
      noHome: false,
      apptainerCacheDir: "/scratch/cache",
      oldRuntime: "refuse",
      requirements: "HasSingularity",
      accountingGroups: { default: "group_default" },
    });
    expect(p).toMatchObject({
      uid: "7f0c6d3e-1b2a-4c5d-8e9f-0a1b2c3d4e5f",
      name: "web-1",
      namespace: "default",
      sidecarId: "site-7",
      batchName: "default/web-1",
      dummy: true,
      commandPrefix: "source /etc/profile",
      runtime: { pinned: "/usr/bin/apptainer", searchPath: ["/opt/apptainer/bin"], noHome: false, cacheDir: "/scratch/cache", oldRuntime: "refuse" },
      submit: { lines: [], requirements: "HasSingularity", accountingGroup: "group_default" },
      warnings: [],
    });
  });

  test("no accounting group for an unmapped namespace, even one named like an Object property", () => {
    const p = plan(makeCreateRequest({ metadata: { namespace: "constructor" } }), { accountingGroups: { other: "g" } });
    expect(p.submit.accountingGroup).toBeUndefined();
  });

  test("a pod whose containers all stay in the cluster: only init containers, and a warning", () => {
    const p = plan(makeCreateRequest({ spec: { initContainers: [{ name: "prep", image: "busybox" }], containers: [] } }));
    expect(p.containers).toEqual([]);
    expect(p.initContainers.map((c) => c.name)).toEqual(["prep"]);
    expect(p.warnings).toEqual(["the pod has no offloaded containers: the job runs only its init containers"]);
  });

  test("the rich example plans with its config", () => {
    const p = rich();
    expect(p.uid).toBe(RICH_UID);
    expect(p.initContainers.map((c) => [c.name, c.index, c.init])).toEqual([
      ["fetch", 0, true],
      ["migrate", 1, true],
    ]);
    expect(p.containers.map((c) => [c.name, c.index, c.init])).toEqual([
      ["app", 0, false],
      ["sidecar", 1, false],
    ]);
    expect(p.warnings).toEqual([]);
  });
});

// docs/interlink.md#annotations-kept-from-the-python-plugin (image conventions of the Python
// plugin)
describe("images", () => {
  const ROOT = { "htcondor-job.knoc.io/image-root": "/images/" };
  const cases: [string, Record<string, string>, string][] = [
    ["busybox:1.36", {}, "docker://busybox:1.36"],
    ["registry.example.org:5000/team/img@sha256:abc", {}, "docker://registry.example.org:5000/team/img@sha256:abc"],
    ["docker://alpine:3.20", {}, "docker://alpine:3.20"],
    ["oras://ghcr.io/org/img:1", {}, "oras://ghcr.io/org/img:1"],
    ["library://alpine", {}, "library://alpine"],
    ["/cvmfs/unpacked.cern.ch/img", {}, "/cvmfs/unpacked.cern.ch/img"],
    ["/cvmfs/unpacked.cern.ch/img", ROOT, "/cvmfs/unpacked.cern.ch/img"],
    ["/sif/tool.sif", {}, "/sif/tool.sif"],
    ["/sif/tool.sif", ROOT, "/images/sif/tool.sif"],
    ["/x/dir-image", { "htcondor-job.vk.io/image-root": "/srv" }, "/srv/x/dir-image"],
    ["images/tool.sif", {}, "images/tool.sif"],
    ["docker-archive:/scratch/img.tar", {}, "docker-archive:/scratch/img.tar"],
  ];
  test.each(cases)("%p %j → %p", (image, annotations, uri) => {
    expect(only(plan(pod1({ image }, { metadata: { annotations } }))).image).toEqual({ kind: "container", uri });
  });

  test("host and host:<site> when the site allows it", () => {
    expect(only(plan(pod1({ image: "host" }), { allowHostImage: true })).image).toEqual({ kind: "host" });
    expect(only(plan(pod1({ image: "host:site-a" }), { allowHostImage: true })).image).toEqual({ kind: "host", site: "site-a" });
  });
});

describe("command and args (Kubernetes semantics)", () => {
  const cases: [string, Json, string[] | undefined, string[] | undefined][] = [
    ["command only", { command: ["python3", "-V"] }, ["python3", "-V"], undefined],
    ["args only", { args: ["--serve"] }, undefined, ["--serve"]],
    ["neither", {}, undefined, undefined],
    ["both", { command: ["sh", "-c"], args: ["echo $1"] }, ["sh", "-c"], ["echo $1"]],
    ["empty lists are absent", { command: [], args: null }, undefined, undefined],
    [
      "$(VAR) expands from the container env, $$ escapes, unknown stays",
      { command: ["echo", "$(GREETING)"], args: ["$$(GREETING)", "$(NOPE)", "$(HOSTNAME)", "`x` $(y"], env: [{ name: "GREETING", value: "hi" }] },
      ["echo", "hi"],
      // HOSTNAME is the runtime's, not one of the container's own variables: not expanded.
      ["$(GREETING)", "$(NOPE)", "$(HOSTNAME)", "`x` $(y"],
    ],
  ];
  test.each(cases)("%s", (_, c, command, args) => {
    const p = only(plan(pod1(c)));
    expect(p.command).toEqual(command);
    expect(p.args).toEqual(args);
  });

  test("workingDir", () => {
    expect(only(plan(pod1({ workingDir: "/srv/app" }))).workingDir).toBe("/srv/app");
  });

  test("expandK8s follows the kubelet's expansion", () => {
    const vars: Record<string, string> = { A: "1", B: "$(A)" };
    const cases: [string, string][] = [
      ["$(A)", "1"],
      ["$(B)", "$(A)"],
      ["$$(A)", "$(A)"],
      ["$$", "$"],
      ["$", "$"],
      ["a$", "a$"],
      ["$x", "$x"],
      ["$(A", "$(A"],
      ["$()", "$()"],
      ["x$(A)y$(C)z", "x1y$(C)z"],
    ];
    for (const [input, out] of cases) expect(expandK8s(input, (n) => vars[n])).toBe(out);
  });
});

describe("env", () => {
  test("HOSTNAME first, POD_IP from the annotation, then env in order; the env file is byte-exact", () => {
    const value = "a b 'q' \"d\" $(x) `y` $HOME \\ ü 😀\nline2";
    const p = plan(
      pod1(
        { env: [{ name: "HOSTNAME", value: "custom" }, { name: "EMPTY" }, { name: "TRICKY", value }] },
        { metadata: { annotations: { "interlink.eu/pod-ip": "10.0.0.9" } }, status: { podIP: "127.0.0.1" } },
      ),
    );
    const env = only(p).env;
    expect(env).toEqual([
      ["HOSTNAME", "web-1"],
      ["POD_IP", "10.0.0.9"],
      ["HOSTNAME", "custom"],
      ["EMPTY", ""],
      ["TRICKY", "a b 'q' \"d\" $(x) `y` $HOME \\ ü 😀\nline2"],
    ]);
    expect(p.podIP).toBe("10.0.0.9");
    const f = p.files.find((x) => x.path === "env/c.main.env")!;
    expect(f).toMatchObject({ mode: 0o600, secret: true });
    expect(f.content).toEqual(new TextEncoder().encode(`HOSTNAME=web-1\0POD_IP=10.0.0.9\0HOSTNAME=custom\0EMPTY=\0TRICKY=${value}\0`));
    expect(encodeEnvFile([["A", "1"]])).toEqual(new Uint8Array([65, 61, 49, 0]));
  });

  // The kubelet expands $(VAR) against the container's own variables defined before the
  // reference (envFrom, then env in order); HOSTNAME and POD_IP, which the sidecar adds, are not
  // among them unless the pod sets them itself
  // (docs/interlink.md#the-pod-as-the-virtual-kubelet-sends-it).
  const expansion: [string, Json, [string, string][] | undefined, string[] | undefined][] = [
    ["HOSTNAME is not in the map", { env: [{ name: "A", value: "$(HOSTNAME)" }] }, [["A", "$(HOSTNAME)"]], undefined],
    ["POD_IP is not in the map", { env: [{ name: "A", value: "$(POD_IP)" }] }, [["A", "$(POD_IP)"]], undefined],
    ["…in command and args neither", { command: ["echo", "$(POD_IP)"], args: ["$(HOSTNAME)"] }, [], ["echo", "$(POD_IP)", "$(HOSTNAME)"]],
    [
      "a HOSTNAME the pod sets is",
      { env: [{ name: "HOSTNAME", value: "h" }, { name: "A", value: "$(HOSTNAME)" }] },
      [["HOSTNAME", "h"], ["A", "h"]],
      undefined,
    ],
    ["only entries before the reference", { env: [{ name: "A", value: "$(B)" }, { name: "B", value: "1" }, { name: "C", value: "$(B)" }] }, [["A", "$(B)"], [
      "B",
      "1",
    ], ["C", "1"]], undefined],
    ["valueFrom values join the map", { env: [{ name: "N", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }, { name: "A", value: "x$(N)" }] }, [[
      "N",
      "web-1",
    ], ["A", "xweb-1"]], undefined],
  ];
  test.each(expansion)("$(VAR) expansion: %s", (_, c, env, argv) => {
    const p = only(plan(pod1(c, { metadata: { annotations: { "interlink.eu/pod-ip": "10.0.0.9" } } })));
    expect(p.env.slice(2)).toEqual(env ?? []);
    if (argv) expect([...(p.command ?? []), ...(p.args ?? [])]).toEqual(argv);
  });

  test("subPathExpr expands only from the container's own variables", () => {
    const p = plan(
      pod1({ env: [{ name: "D", value: "d" }], volumeMounts: [{ name: "v", mountPath: "/m", subPathExpr: "$(D)/$(HOSTNAME)" }] }, {
        volumes: [{ name: "v", emptyDir: {} }],
      }),
    );
    expect(only(p).mounts[0]!.source).toEqual({ kind: "sandbox", path: "emptydir/v/d/$(HOSTNAME)" });
  });

  test("POD_IP falls back to status.podIP, and is absent when unknown", () => {
    expect(only(plan(pod1({}, { status: { podIP: "127.0.0.1" } }))).env).toContainEqual(["POD_IP", "127.0.0.1"]);
    const p = plan(pod1({}));
    expect(only(p).env).toEqual([["HOSTNAME", "web-1"]]);
    expect(p.podIP).toBeUndefined();
  });

  test("HOSTNAME is spec.hostname, else the name cut to 63 characters", () => {
    expect(only(plan(pod1({}, { spec: { hostname: "node-a" } }))).env[0]).toEqual(["HOSTNAME", "node-a"]);
    const long = `${"a".repeat(62)}.b${"c".repeat(20)}`;
    expect(only(plan(pod1({}, { metadata: { name: long } }))).env[0]).toEqual(["HOSTNAME", "a".repeat(62)]);
  });

  test("every valueFrom of the rich example resolves", () => {
    const app = rich().containers[0]!;
    const env = Object.fromEntries(app.env);
    expect(env).toMatchObject({
      GREETING: "hello $(POD_NAME) $HOME", // POD_NAME is defined after GREETING
      EMPTY: "",
      POD_NAME: "rich-pod",
      POD_NAMESPACE: "team-a",
      POD_UID: RICH_UID,
      APP_LABEL: "rich",
      NOTE: 'it\'s "quoted"',
      NODE: "interlink-node",
      SA: "runner",
      MY_POD_IP: "10.244.0.7",
      MEM_MI: "1024",
      CPU_REQ: "1",
      DB_USER: "admin",
      DB_PASS: "p@ss w0rd $(not-expanded) `x`",
      LOG_LEVEL: "debug",
    });
    expect(env.MAYBE).toBeUndefined(); // optional secretKeyRef to a missing secret: skipped
  });

  const fieldRefs: [string, string][] = [
    ["metadata.labels['missing']", ""],
    ["metadata.annotations['a/b']", "slash"],
    ["status.hostIP", "192.168.1.10"],
    ["status.podIP", "10.1.2.3"],
  ];
  test.each(fieldRefs)("fieldRef %s", (fieldPath, value) => {
    const body = pod1(
      { env: [{ name: "V", valueFrom: { fieldRef: { fieldPath } } }] },
      { metadata: { annotations: { "a/b": "slash" } }, status: { podIP: "10.1.2.3", hostIP: "192.168.1.10" } },
    );
    expect(only(plan(body)).env.at(-1)).toEqual(["V", value]);
  });

  // [resource, divisor, resources, expected] — the kubelet's rounding: ceil(value / divisor)
  const resourceRefs: [string, string | undefined, Json, string][] = [
    ["limits.cpu", undefined, { limits: { cpu: "500m" } }, "1"],
    ["limits.cpu", "1m", { limits: { cpu: "500m" } }, "500"],
    ["limits.cpu", "1", { limits: { cpu: "2500m" } }, "3"],
    ["requests.cpu", "1m", { requests: { cpu: "250m" } }, "250"],
    ["requests.cpu", "1m", { limits: { cpu: "2" } }, "2000"],
    // nothing set: the site default the job counts for the container (DefaultResources cpu 1, memory 2Gi)
    ["requests.cpu", "1m", {}, "1000"],
    ["requests.memory", "1Mi", { limits: { cpu: "1" } }, "2048"],
    ["requests.ephemeral-storage", undefined, {}, "0"],
    ["limits.memory", undefined, { limits: { memory: "1Ki" } }, "1024"],
    ["limits.memory", "1Mi", { limits: { memory: "129M" } }, "124"],
    ["limits.memory", "1Gi", { limits: { memory: "1" } }, "1"],
    ["requests.memory", "1k", { requests: { memory: "1500" } }, "2"],
    ["limits.ephemeral-storage", "1Mi", { limits: { "ephemeral-storage": "2Gi" } }, "2048"],
    // no limit: the job's request stands for node allocatable
    ["limits.cpu", undefined, {}, "1"],
    ["limits.memory", "1Mi", {}, "2048"],
  ];
  test.each(resourceRefs)("resourceFieldRef %s / %p with %j → %p", (resource, divisor, resources, value) => {
    const ref: Json = { resource };
    if (divisor) ref.divisor = divisor;
    const body = pod1({ resources, env: [{ name: "R", valueFrom: { resourceFieldRef: ref } }] });
    expect(only(plan(body)).env.at(-1)).toEqual(["R", value]);
  });

  test("envFrom (if the VK left it): configMap and secret keys with a prefix, invalid names skipped", () => {
    const body = pod1(
      {
        envFrom: [{ configMapRef: { name: "cm" }, prefix: "CM_" }, { secretRef: { name: "s" } }, { configMapRef: { name: "gone", optional: true } }],
        env: [{ name: "AFTER", value: "$(CM_b)" }],
      },
      { data: { configMaps: [configMapObject("cm", { b: "2", a: "1", "x.y": "skip" })], secrets: [secretObject("s", { TOKEN: "t0k" })] } },
    );
    const p = plan(body);
    expect(only(p).env.slice(1)).toEqual([
      ["CM_a", "1"],
      ["CM_b", "2"],
      ["TOKEN", "t0k"],
      ["AFTER", "2"],
    ]);
    // No command: the image's entrypoint cannot be given a name Apptainer does not carry.
    expect(p.warnings.join("\n")).toContain('envFrom variable "CM_x.y" skipped: not a shell identifier, and the container has no command');
    // With a command it would travel on a command line (env NAME=value), which every user of the
    // worker can read: a configMap's or secret's value is refused there (docs/threat-model.md#3-secret-values-on-command-lines).
    expectInvalid(
      () => plan(changed(body, (r) => (r.pod.spec.containers[0].command = ["sh"]))),
      'spec.containers[0].envFrom[0]: env "CM_x.y" of container "main" takes its value from a secret or configMap, so its name must be a shell identifier',
    );
  });

  // docs/pod-to-job.md#env; KEP-4369: any printable ASCII name but '='. Byte-exact into the env
  // file.
  test("env names that are not shell identifiers: kept for a command, refused for the image's entrypoint", () => {
    const env = [{ name: "A-B", value: "1" }, { name: "my.var", value: "$(A-B)2" }, { name: "1VAR", value: "3" }];
    const p = plan(pod1({ command: ["sh", "-c", "env"], env }));
    expect(only(p).env.slice(1)).toEqual([["A-B", "1"], ["my.var", "12"], ["1VAR", "3"]]);
    expect(fileText(p, "env/c.main.env")).toBe("HOSTNAME=web-1\0A-B=1\0my.var=12\0" + "1VAR=3\0");
    expectInvalid(() => plan(pod1({ env })), 'spec.containers[0].env[0].name: "A-B" is not a shell identifier, which Apptainer can pass only to a command');
    // `env NAME=value cmd` would read a first word with '=' as one more variable.
    expectInvalid(() => plan(pod1({ command: ["X=1"], env })), "spec.containers[0].command[0]: \"X=1\" must not contain '='");
    expectInvalid(
      () => plan(pod1({ command: ["sh"], env, livenessProbe: { exec: { command: ["K=v", "x"] } } })),
      "spec.containers[0].livenessProbe.exec.command[0]",
    );
    // Identifiers only: a first word with '=' is the container's business (no env in front of it).
    expect(only(plan(pod1({ command: ["X=1"] }))).command).toEqual(["X=1"]);
  });

  test("secretKeyRef/configMapKeyRef also find objects mounted by another container of the pod", () => {
    const body = makeCreateRequest({
      spec: {
        containers: [
          { name: "a", image: "busybox", env: [{ name: "S", valueFrom: { secretKeyRef: { name: "s", key: "k" } } }] },
          { name: "b", image: "busybox" },
        ],
      },
      container: [dataEntry("a"), dataEntry("b", { secrets: [secretObject("s", { k: "v" })] })],
    });
    expect(plan(body).containers[0]!.env).toContainEqual(["S", "v"]);
  });

  test("configMapKeyRef reads binaryData too", () => {
    const body = pod1(
      { env: [{ name: "B", valueFrom: { configMapKeyRef: { name: "cm", key: "bin" } } }] },
      { data: { configMaps: [configMapObject("cm", null, { bin: b64("binary but utf-8 ✓") })] } },
    );
    expect(only(plan(body)).env.at(-1)).toEqual(["B", "binary but utf-8 ✓"]);
  });
});

// docs/interlink.md#volume-data
describe("volumes", () => {
  test("the rich example: every type lands where it should", () => {
    const p = rich();
    const app = p.containers[0]!;
    expect(app.mounts).toEqual([
      { source: { kind: "sandbox", path: "volumes/config" }, target: "/etc/app", readOnly: true },
      { source: { kind: "sandbox", path: "volumes/creds" }, target: "/var/run/secrets/db", readOnly: true },
      { source: { kind: "sandbox", path: "volumes/kube-api-access-x7k2p" }, target: "/var/run/secrets/kubernetes.io/serviceaccount", readOnly: true },
      { source: { kind: "sandbox", path: "volumes/podinfo" }, target: "/etc/podinfo", readOnly: true },
      { source: { kind: "sandbox", path: "emptydir/work" }, target: "/work", readOnly: false },
      { source: { kind: "host", path: "/data/shared/ro" }, target: "/shared", readOnly: true },
    ]);
    expect(p.containers[1]!.mounts).toEqual([
      { source: { kind: "sandbox", path: "emptydir/work/out" }, target: "/data", readOnly: false },
      { source: { kind: "sandbox", path: "volumes/config/app.yaml" }, target: "/etc/app.yaml", readOnly: true },
    ]);
    expect(p.initContainers[0]!.mounts).toEqual([{ source: { kind: "sandbox", path: "emptydir/work" }, target: "/work", readOnly: false }]);
    expect(p.emptyDirs).toEqual(["work"]);
    expect(p.transferInput).toEqual(["env", "volumes"]);

    // docs/threat-model.md#secrets: secret files are 0600 on the submit side (mode); podMode is what the wrapper sets
    // in the sandbox. Env files and secret/projected volumes are secret, the others not.
    const files = Object.fromEntries(p.files.map((f) => [f.path, [f.mode, f.podMode, f.secret]]));
    expect(files).toEqual({
      "env/i.fetch.env": [0o600, undefined, true],
      "env/i.migrate.env": [0o600, undefined, true],
      "env/c.app.env": [0o600, undefined, true],
      "env/c.sidecar.env": [0o600, undefined, true],
      // configMap items: defaultMode 0640, item mode 0600; "log.level" not listed in items
      "volumes/config/app.yaml": [0o640, 0o640, false],
      "volumes/config/img/logo.bin": [0o600, 0o600, false],
      // secret: all keys, base64-decoded, defaultMode 0400
      "volumes/creds/password": [0o600, 0o400, true],
      "volumes/creds/username": [0o600, 0o400, true],
      // projected (the service-account token): defaultMode 0644 in the sandbox only
      "volumes/kube-api-access-x7k2p/token": [0o600, 0o644, true],
      "volumes/kube-api-access-x7k2p/ca.crt": [0o600, 0o644, true],
      "volumes/kube-api-access-x7k2p/namespace": [0o600, 0o644, true],
      "volumes/podinfo/labels": [0o644, 0o644, false],
      "volumes/podinfo/name": [0o644, 0o644, false],
      "volumes/podinfo/mem_limit": [0o644, 0o644, false],
    });
    for (const f of p.files) if (f.secret) expect([f.path, f.mode]).toEqual([f.path, 0o600]);
    expect(fileText(p, "volumes/creds/password")).toBe("p@ss w0rd $(not-expanded) `x`");
    expect(p.files.find((f) => f.path === "volumes/config/img/logo.bin")!.content).toEqual(new Uint8Array([0, 1, 0xff]));
    expect(fileText(p, "volumes/kube-api-access-x7k2p/token")).toBe(RICH_TOKEN);
    expect(fileText(p, "volumes/kube-api-access-x7k2p/ca.crt")).toBe(RICH_CA);
    expect(fileText(p, "volumes/podinfo/labels")).toBe('app="rich"\ntier="batch"');
    expect(fileText(p, "volumes/podinfo/mem_limit")).toBe("1024");
    // each volume's files once, although "config" is mounted by two containers and sent twice
    expect(p.files.filter((f) => f.path === "volumes/config/app.yaml")).toHaveLength(1);
  });

  // The kubelet makes a relative mountPath absolute (relative to the container's root).
  test("a relative mountPath is mounted at / + path", () => {
    const p = plan(pod1({ volumeMounts: [{ name: "v", mountPath: "data/dir" }] }, { volumes: [{ name: "v", emptyDir: {} }] }));
    expect(only(p).mounts).toEqual([{ source: { kind: "sandbox", path: "emptydir/v" }, target: "/data/dir", readOnly: false }]);
  });

  test("configMap without items: every data and binaryData key, default mode 0644", () => {
    const p = plan(
      pod1({ volumeMounts: [{ name: "c", mountPath: "/c", readOnly: false }] }, {
        volumes: [{ name: "c", configMap: { name: "cm" } }],
        data: { configMaps: [configMapObject("cm", { "a.txt": "A" }, { "b.bin": b64("B") })] },
      }),
    );
    expect(p.files.filter((f) => f.path.startsWith("volumes/")).map((f) => [f.path, f.mode, text.decode(f.content)])).toEqual([
      ["volumes/c/a.txt", 0o644, "A"],
      ["volumes/c/b.bin", 0o644, "B"],
    ]);
    expect(only(p).mounts[0]!.readOnly).toBe(true); // configMap volumes are always read-only
  });

  test("optional configMap that is not in the request: an empty directory", () => {
    const p = plan(pod1({ volumeMounts: [{ name: "c", mountPath: "/c" }] }, { volumes: [{ name: "c", configMap: { name: "gone", optional: true } }] }));
    expect(only(p).mounts[0]!.source).toEqual({ kind: "sandbox", path: "emptydir/c" });
    expect(p.emptyDirs).toEqual(["c"]);
    expect(p.transferInput).toEqual(["env"]);
  });

  test("optional items with a missing key are skipped", () => {
    const p = plan(
      pod1({ volumeMounts: [{ name: "c", mountPath: "/c" }] }, {
        volumes: [{ name: "c", configMap: { name: "cm", optional: true, items: [{ key: "x", path: "x" }, { key: "a", path: "sub/a" }] } }],
        data: { configMaps: [configMapObject("cm", { a: "1" })] },
      }),
    );
    expect(p.files.map((f) => f.path)).toContain("volumes/c/sub/a");
    expect(p.files.map((f) => f.path)).not.toContain("volumes/c/x");
  });

  test("projected volume with no data: empty directory and a warning (DisableProjectedVolumes)", () => {
    const p = plan(
      pod1({ volumeMounts: [{ name: "kube-api-access-abc", mountPath: "/var/run/secrets/kubernetes.io/serviceaccount" }] }, {
        volumes: [{ name: "kube-api-access-abc", projected: { sources: [{ serviceAccountToken: { path: "token" } }] } }],
      }),
    );
    expect(only(p).mounts[0]).toEqual({
      source: { kind: "sandbox", path: "emptydir/kube-api-access-abc" },
      target: "/var/run/secrets/kubernetes.io/serviceaccount",
      readOnly: true,
    });
    expect(p.warnings).toHaveLength(1);
    expect(p.warnings[0]).toContain('projected volume "kube-api-access-abc" arrived without data (serviceAccountToken missing)');
  });

  test("projected volume with no data: downwardAPI sources are computed here", () => {
    const p = plan(
      pod1({ volumeMounts: [{ name: "info", mountPath: "/info" }] }, {
        metadata: { labels: { b: "2", a: 'x"y' } },
        volumes: [{ name: "info", projected: { sources: [{ downwardAPI: { items: [{ path: "labels", fieldRef: { fieldPath: "metadata.labels" } }] } }] } }],
      }),
    );
    expect(fileText(p, "volumes/info/labels")).toBe('a="x\\"y"\nb="2"');
    expect(p.warnings).toEqual([]);
  });

  test("projected keys may be nested paths", () => {
    const p = plan(
      pod1({ volumeMounts: [{ name: "p", mountPath: "/p" }] }, {
        volumes: [{ name: "p", projected: { sources: [{ configMap: { name: "x", items: [{ key: "k", path: "dir/k", mode: 0o600 }] } }] } }],
        data: { projected: [{ metadata: { name: "p" }, data: { "dir/k": "v" } }] },
      }),
    );
    expect(p.files.find((f) => f.path === "volumes/p/dir/k")).toMatchObject({ mode: 0o600, podMode: 0o600, secret: true });
  });

  test("emptyDir: read-write unless readOnly, shared by name, subPath joined", () => {
    const body = makeCreateRequest({
      spec: {
        volumes: [{ name: "scratch", emptyDir: { medium: "Memory", sizeLimit: "1Gi" } }, { name: "defaulted" }],
        containers: [
          { name: "a", image: "busybox", volumeMounts: [{ name: "scratch", mountPath: "/s" }, { name: "defaulted", mountPath: "/d" }] },
          { name: "b", image: "busybox", volumeMounts: [{ name: "scratch", mountPath: "/s", subPath: "./x//y/", readOnly: true }] },
        ],
      },
    });
    const p = plan(body);
    expect(p.containers[0]!.mounts.map((m) => [m.source, m.readOnly])).toEqual([
      [{ kind: "sandbox", path: "emptydir/scratch" }, false],
      [{ kind: "sandbox", path: "emptydir/defaulted" }, false],
    ]);
    expect(p.containers[1]!.mounts[0]).toEqual({ source: { kind: "sandbox", path: "emptydir/scratch/x/y" }, target: "/s", readOnly: true });
    expect(p.emptyDirs).toEqual(["scratch", "defaulted"]);
  });

  test("subPathExpr expands from the container env", () => {
    const p = plan(
      pod1({
        env: [{ name: "SUB", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }],
        volumeMounts: [{ name: "v", mountPath: "/v", subPathExpr: "logs/$(SUB)" }],
      }, {
        volumes: [{ name: "v", emptyDir: {} }],
      }),
    );
    expect(only(p).mounts[0]!.source).toEqual({ kind: "sandbox", path: "emptydir/v/logs/web-1" });
  });

  const hostPaths: [string, string[], string | undefined, string][] = [
    ["/data/shared", ["/data/shared"], undefined, "/data/shared"],
    ["/data/shared/sub/", ["/data/shared/"], "x", "/data/shared/sub/x"],
    ["/cvmfs/atlas.cern.ch", ["/cvmfs"], undefined, "/cvmfs/atlas.cern.ch"],
    ["/anything", ["/"], undefined, "/anything"],
  ];
  test.each(hostPaths)("hostPath %p allowed by %j (subPath %p) → %p", (path, allow, subPath, source) => {
    const mount: Json = { name: "h", mountPath: "/h" };
    if (subPath) mount.subPath = subPath;
    const p = plan(pod1({ volumeMounts: [mount] }, { volumes: [{ name: "h", hostPath: { path } }] }), { hostPathAllow: allow });
    // With a subPath, the volume's own folder: the wrapper checks the resolved source stays in it.
    const root = subPath ? { root: path.replace(/\/+$/, "") } : {};
    expect(only(p).mounts[0]).toEqual({ source: { kind: "host", path: source, ...root }, target: "/h", readOnly: false });
  });

  test("volumes no offloaded container mounts are ignored, whatever their type", () => {
    const p = plan(pod1({}, { volumes: [{ name: "claim", persistentVolumeClaim: { claimName: "c" } }, { name: "n", nfs: { server: "s", path: "/" } }] }));
    expect(p.files.map((f) => f.path)).toEqual(["env/c.main.env"]);
  });

  // ExportPodData: false → configMap/secret/projected are not exported; the mount stays, empty.
  test("ExportPodData false: data volumes mounted as empty directories, with warnings", () => {
    const p = rich({ exportPodData: false });
    expect(p.files.filter((f) => f.path.startsWith("volumes/")).map((f) => f.path)).toEqual([
      "volumes/podinfo/labels",
      "volumes/podinfo/name",
      "volumes/podinfo/mem_limit",
    ]);
    expect(p.containers[0]!.mounts.slice(0, 3).map((m) => m.source)).toEqual([
      { kind: "sandbox", path: "emptydir/config" },
      { kind: "sandbox", path: "emptydir/creds" },
      { kind: "sandbox", path: "emptydir/kube-api-access-x7k2p" },
    ]);
    expect(p.warnings).toHaveLength(3);
    expect(p.warnings[0]).toContain("ExportPodData is false");
  });
});

describe("resources", () => {
  // [case, init containers' resources, containers' resources, config defaults?, expected]
  const R = (limits: Json = {}, requests: Json = {}) => ({ limits, requests });
  const cases: [string, Json[], Json[], Partial<PlanConfig["defaultResources"]> | undefined, JobPlan["resources"]][] = [
    ["nothing set: site defaults", [], [R()], undefined, { cpus: 1, memoryMiB: 2048, gpus: 0 }],
    ["defaults with disk", [], [R()], { cpu: "2", memory: "1Gi", disk: "10Gi" }, { cpus: 2, memoryMiB: 1024, diskKiB: 10485760, gpus: 0 }],
    ["cpu only: memory from defaults", [], [R({ cpu: "3" })], undefined, { cpus: 3, memoryMiB: 2048, gpus: 0 }],
    ["500m rounds up to 1", [], [R({ cpu: "500m", memory: "129M" })], undefined, { cpus: 1, memoryMiB: 124, gpus: 0 }],
    ["limits win over requests", [], [R({ cpu: "2", memory: "1Gi" }, { cpu: "1", memory: "512Mi" })], undefined, { cpus: 2, memoryMiB: 1024, gpus: 0 }],
    ["requests when no limits", [], [R({}, { cpu: "1500m", memory: "123Mi" })], undefined, { cpus: 2, memoryMiB: 123, gpus: 0 }],
    ["containers add up (exactly)", [], [R({ cpu: "700m", memory: "0.1Gi" }), R({ cpu: "300m", memory: "0.2Gi" })], undefined, {
      cpus: 1,
      memoryMiB: 308,
      gpus: 0,
    }],
    ["init containers take the max", [R({ cpu: "4", memory: "4Gi" }), R({ cpu: "1" })], [R({ cpu: "1", memory: "1Gi" }), R({ cpu: "1" })], undefined, {
      cpus: 4,
      memoryMiB: 4096,
      gpus: 0,
    }],
    ["sum beats a smaller init", [R({ cpu: "1", memory: "1Gi" })], [R({ cpu: "1", memory: "1Gi" }), R({ cpu: "1", memory: "1Gi" })], undefined, {
      cpus: 2,
      memoryMiB: 2048,
      gpus: 0,
    }],
    ["129e6 bytes", [], [R({ memory: "129e6" })], undefined, { cpus: 1, memoryMiB: 124, gpus: 0 }],
    ["ephemeral-storage → disk KiB", [], [R({ "ephemeral-storage": "1G" })], undefined, { cpus: 1, memoryMiB: 2048, diskKiB: 976563, gpus: 0 }],
    // Two containers that set no cpu or memory: each counts with the defaults.
    ["GPUs of every vendor add up", [], [R({ "nvidia.com/gpu": "2" }), R({ "amd.com/gpu": "1" })], undefined, { cpus: 2, memoryMiB: 4096, gpus: 3 }],
    ["GPUs: init max", [R({ "nvidia.com/gpu": "4" })], [R({ "nvidia.com/gpu": "1" })], undefined, { cpus: 1, memoryMiB: 2048, gpus: 4 }],
    ["other extended resources are ignored", [], [R({ "example.com/foo": "3", "hugepages-2Mi": "1Gi" })], undefined, { cpus: 1, memoryMiB: 2048, gpus: 0 }],
    // Defaults apply per container and per resource it leaves unset (as a LimitRange default).
    ["a 100Mi sidecar does not make the pod 100Mi", [], [R({ cpu: "1" }), R({ memory: "100Mi" })], undefined, { cpus: 2, memoryMiB: 2148, gpus: 0 }],
    ["two containers that set nothing: twice the defaults", [], [R(), R()], undefined, { cpus: 2, memoryMiB: 4096, gpus: 0 }],
    ["requests count as set", [], [R({}, { memory: "64Mi" }), R({}, { cpu: "250m" })], { cpu: "2", memory: "1Gi" }, { cpus: 3, memoryMiB: 1088, gpus: 0 }],
    ["an init container that sets nothing counts with the defaults", [R()], [R({ cpu: "500m", memory: "512Mi" })], undefined, {
      cpus: 1,
      memoryMiB: 2048,
      gpus: 0,
    }],
    ["disk default per container that sets none", [], [R({ "ephemeral-storage": "1Gi" }), R()], { disk: "10Gi" }, {
      cpus: 2,
      memoryMiB: 4096,
      diskKiB: 11534336,
      gpus: 0,
    }],
    ["no disk default: a container that sets none adds nothing", [], [R({ "ephemeral-storage": "1Gi" }), R()], undefined, {
      cpus: 2,
      memoryMiB: 4096,
      diskKiB: 1048576,
      gpus: 0,
    }],
  ];
  test.each(cases)("%s", (_, init, main, defaults, expected) => {
    const body = makeCreateRequest({
      spec: {
        initContainers: init.map((resources, i) => ({ name: `init-${i}`, image: "busybox", resources })),
        containers: main.map((resources, i) => ({ name: `c-${i}`, image: "busybox", resources })),
      },
    });
    const cfg = defaults ? { defaultResources: { cpu: "1", memory: "2Gi", ...defaults } } : {};
    expect(plan(body, cfg).resources).toEqual(expected);
  });

  test("each container's GPUs are on its plan (for --nv)", () => {
    const p = rich();
    expect(p.containers.map((c) => c.gpus)).toEqual([1, 0]);
    expect(p.resources).toEqual({ cpus: 2, memoryMiB: 1148, diskKiB: 1048576, gpus: 1 });
  });

  // docs/pod-to-job.md#resources: AMD GPUs need the runtime's --rocm, not --nv (Apptainer and SingularityCE have both).
  // [case, the container's resources, its gpus, its amdGpus, the runtime's GPU flags]
  const gpuCases: [string, Json, number, number | undefined, string[]][] = [
    ["no GPU: no flag", R({ cpu: "1" }), 0, undefined, []],
    ["nvidia.com/gpu → --nv", R({ "nvidia.com/gpu": "2" }), 2, undefined, ["--nv"]],
    ["amd.com/gpu → --rocm", R({ "amd.com/gpu": "1" }), 1, 1, ["--rocm"]],
    ["amd.com/gpu in requests only → --rocm", R({}, { "amd.com/gpu": "2" }), 2, 2, ["--rocm"]],
    ["another vendor's <vendor>/gpu → --nv", R({ "intel.com/gpu": "1" }), 1, undefined, ["--nv"]],
    ["a bare gpu → --nv", R({ gpu: "1" }), 1, undefined, ["--nv"]],
    ["amd.com/gpu and nvidia.com/gpu → both", R({ "nvidia.com/gpu": "1", "amd.com/gpu": "2" }), 3, 2, ["--nv", "--rocm"]],
    ["amd.com/gpu: 0 asks for none", R({ "amd.com/gpu": "0" }), 0, undefined, []],
  ];
  test.each(gpuCases)("GPUs: %s", (_, resources, gpus, amdGpus, flags) => {
    const body = makeCreateRequest({
      spec: {
        initContainers: [{ name: "init", image: "busybox", resources }],
        containers: [{ name: "main", image: "busybox", resources }, { name: "plain", image: "busybox" }],
      },
    });
    const p = plan(body);
    for (const c of [p.initContainers[0]!, p.containers[0]!]) {
      expect([c.gpus, c.amdGpus]).toEqual([gpus, amdGpus]);
      expect(gpuFlags(c)).toEqual(flags);
    }
    expect([p.containers[1]!.gpus, p.containers[1]!.amdGpus, gpuFlags(p.containers[1]!)]).toEqual([0, undefined, []]);
    expect(p.resources.gpus).toBe(gpus);
  });
});

describe("probes and lifecycle", () => {
  const defaults = { initialDelaySeconds: 0, periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 };
  const cases: [string, Json, Json][] = [
    ["exec with defaults", { exec: { command: ["true"] } }, { handler: { kind: "exec", command: ["true"] }, ...defaults }],
    [
      "httpGet with a named port and every field",
      {
        httpGet: { path: "/healthz", port: "web", scheme: "HTTPS", host: "10.0.0.1", httpHeaders: [{ name: "Host", value: "x" }] },
        initialDelaySeconds: 3,
        periodSeconds: 5,
        timeoutSeconds: 2,
        successThreshold: 1,
        failureThreshold: 7,
      },
      {
        handler: { kind: "httpGet", scheme: "HTTPS", host: "10.0.0.1", port: 8080, path: "/healthz", headers: [["Host", "x"]] },
        initialDelaySeconds: 3,
        periodSeconds: 5,
        timeoutSeconds: 2,
        successThreshold: 1,
        failureThreshold: 7,
      },
    ],
    ["httpGet defaults: 127.0.0.1, /, HTTP", { httpGet: { port: 80 } }, {
      handler: { kind: "httpGet", scheme: "HTTP", host: "127.0.0.1", port: 80, path: "/", headers: [] },
      ...defaults,
    }],
    ["tcpSocket, numeric string port", { tcpSocket: { port: "5432" } }, { handler: { kind: "tcpSocket", host: "127.0.0.1", port: 5432 }, ...defaults }],
    ["zero fields take the defaults (SetDefaults_Probe)", { exec: { command: ["x"] }, periodSeconds: 0, timeoutSeconds: 0, failureThreshold: 0 }, {
      handler: { kind: "exec", command: ["x"] },
      ...defaults,
    }],
  ];
  test.each(cases)("%s", (_, probe, expected) => {
    for (const kind of ["startupProbe", "readinessProbe", "livenessProbe"] as const) {
      const p = only(plan(pod1({ ports: [{ name: "web", containerPort: 8080 }], [kind]: probe })));
      expect(p[kind]).toEqual(expected);
    }
  });

  test("a readiness probe may need several successes; liveness and startup keep their own grace period", () => {
    const p = only(
      plan(
        pod1({
          readinessProbe: { exec: { command: ["r"] }, successThreshold: 2 },
          livenessProbe: { exec: { command: ["l"] }, terminationGracePeriodSeconds: 5 },
          startupProbe: { exec: { command: ["s"] }, terminationGracePeriodSeconds: 7 },
        }),
      ),
    );
    expect(p.readinessProbe).toMatchObject({ successThreshold: 2 });
    expect(p.readinessProbe?.terminationGracePeriodSeconds).toBeUndefined();
    expect([p.livenessProbe?.terminationGracePeriodSeconds, p.startupProbe?.terminationGracePeriodSeconds]).toEqual([5, 7]);
  });

  test("postStart and preStop", () => {
    const p = only(
      plan(
        pod1({
          ports: [{ name: "web", containerPort: 8080 }],
          lifecycle: { postStart: { httpGet: { port: "web", path: "/started" } }, preStop: { exec: { command: ["sh", "-c", "kill -TERM 1"] } } },
        }),
      ),
    );
    expect(p.postStart).toEqual({ kind: "httpGet", scheme: "HTTP", host: "127.0.0.1", port: 8080, path: "/started", headers: [] });
    expect(p.preStop).toEqual({ kind: "exec", command: ["sh", "-c", "kill -TERM 1"] });
    expect(only(plan(pod1({ lifecycle: { preStop: { sleep: { seconds: 5 } } } }))).preStop).toEqual({ kind: "sleep", seconds: 5 });
  });
});

describe("restart, termination, deadline", () => {
  test("defaults: Always, grace 30, no deadline; restart settings from config", () => {
    const body = changed(makeCreateRequest(), (r) => delete r.pod.spec.restartPolicy);
    const p = plan(body, { maxRestarts: 5, restartAlwaysAfterSuccess: true, backoffInitialSeconds: 2, backoffMaxSeconds: 60 });
    expect(p).toMatchObject({
      restartPolicy: "Always",
      terminationGracePeriodSeconds: 30,
      maxRestarts: 5,
      restartAfterSuccess: true,
      backoffInitialSeconds: 2,
      backoffMaxSeconds: 60,
    });
    expect(p.activeDeadlineSeconds).toBeUndefined();
  });
  test("from the pod", () => {
    expect(rich()).toMatchObject({ restartPolicy: "OnFailure", terminationGracePeriodSeconds: 45, activeDeadlineSeconds: 7200 });
    expect(plan(makeCreateRequest({ spec: { terminationGracePeriodSeconds: 0 } })).terminationGracePeriodSeconds).toBe(0);
  });
});

// docs/interlink.md#annotations-the-sidecar-acts-on,
// docs/interlink.md#annotations-kept-from-the-python-plugin
describe("annotations", () => {
  test("pre-exec (both keys), wstunnel, singularity-options, submit-options, pod-ip", () => {
    const p = plan(
      makeCreateRequest({
        metadata: {
          annotations: {
            "slurm-job.vk.io/pre-exec": "echo slurm",
            "htcondor-job.vk.io/pre-exec": "echo htcondor",
            "interlink.eu/wstunnel-client-commands": "wstunnel client -R tcp://8080",
            "htcondor-job.vk.io/singularity-options": " --writable-tmpfs  --env=A=1 ",
            "slurm-job.vk.io/singularity-options": "--nv",
            "htcondor-job.vk.io/submit-options": '# comment\n\n  Request_Walltime = 3600 \r\nMY.Site = "a; b"\n+Flavour=big',
            "interlink.eu/pod-ip": "fd00::7",
          },
        },
      }),
      {
        singularityOptionsAllow: ["--writable-tmpfs", "--env", "--nv"],
        submitOptionsAllow: ["request_walltime", "my.site", "+Flavour"],
        extraSubmitLines: [["+SiteLine", "1"]],
      },
    );
    expect(p.preExec).toEqual(["echo slurm", "echo htcondor"]);
    expect(p.backgroundCommands).toEqual(["wstunnel client -R tcp://8080"]);
    expect(only(p).runtimeOptions).toEqual(["--writable-tmpfs", "--nv"]);
    expect(only(p).execOptions).toEqual(["--env=A=1"]);
    expect(p.submit.lines).toEqual([["+SiteLine", "1"]]);
    expect(p.submit.podOptions).toEqual([
      ["Request_Walltime", "3600"],
      ["MY.Site", '"a; b"'],
      ["+Flavour", "big"],
    ]);
    expect(p.podIP).toBe("fd00::7");
    expect(only(p).env[1]).toEqual(["POD_IP", "fd00::7"]);
  });

  // Each container is an instance: mounts and devices act at `instance start`, env, working
  // directory and HOME at each exec into it (main process, probes, hooks).
  const whenFlags: [string, string[], string[]][] = [
    ["--writable-tmpfs --bind=/a:/b -B=/c:/d --nv --contain", ["--writable-tmpfs", "--bind=/a:/b", "-B=/c:/d", "--nv", "--contain"], []],
    ["--env=A=1 --env-file=/site/env --pwd=/w", [], ["--env=A=1", "--env-file=/site/env", "--pwd=/w"]],
    ["--home=/h:/home/u -H=/x --no-home", ["--home=/h:/home/u", "-H=/x", "--no-home"], ["--home=/h:/home/u", "-H=/x", "--no-home"]],
    ["--cleanenv --no-eval", ["--cleanenv", "--no-eval"], []],
  ];
  test.each(whenFlags)("singularity-options %p: instance start %j, exec %j", (text, start, exec) => {
    const allow = [
      "--writable-tmpfs",
      "--bind",
      "-B",
      "--nv",
      "--contain",
      "--env",
      "--env-file",
      "--pwd",
      "--home",
      "-H",
      "--no-home",
      "--cleanenv",
      "--no-eval",
    ];
    const c = only(
      plan(makeCreateRequest({ metadata: { annotations: { "htcondor-job.vk.io/singularity-options": text } } }), { singularityOptionsAllow: allow }),
    );
    expect([c.runtimeOptions, c.execOptions]).toEqual([start, exec]);
  });

  test("empty channel annotations are ignored even when the channel is off", () => {
    const p = plan(
      makeCreateRequest({
        metadata: {
          annotations: { "slurm-job.vk.io/pre-exec": "", "interlink.eu/wstunnel-client-commands": " ", "htcondor-job.vk.io/singularity-options": "" },
        },
      }),
      { allowPreExec: false, allowWstunnel: false },
    );
    expect([p.preExec, p.backgroundCommands, only(p).runtimeOptions]).toEqual([[], [], []]);
  });

  const submitOptions: [string, string[], [string, string][] | string][] = [
    ["request_cpus = 2", ["request_cpus"], [["request_cpus", "2"]]],
    ["REQUEST_CPUS=2", ["request_cpus"], [["REQUEST_CPUS", "2"]]],
    ["a = \n", ["a"], [["a", ""]]],
    ["request_cpus = 2; executable = /bin/sh", ["request_cpus"], [["request_cpus", "2; executable = /bin/sh"]]],
    ["request_cpus = 2\nexecutable = /tmp/evil", ["request_cpus"], 'submit command "executable" is not allowed on this site (allowed: request_cpus)'],
    ["queue", ["queue"], 'line 1: expected "command = value"'],
    ["= 3", ["x"], 'line 1: expected "command = value"'],
    ["a = b\u0007", ["a"], 'line 1: the value of "a" must not contain control characters'],
    // Unicode's line and paragraph separators and NEL are line breaks too (docs/threat-model.md#7-reasons-on-one-line-by-unicodes-rules).
    ["a = b\u2028c", ["a"], 'line 1: expected "command = value", got "a = b\\u2028c"'],
    ["a = b\u0085c", ["a"], 'line 1: the value of "a" must not contain control characters or line breaks'],
    // A value ending in a backslash would join the next line of the submit file (docs/threat-model.md#6-a-submit-value-ending-in--continues-onto-the-next-line).
    ["rank = 1 \\", ["rank"], "line 1: the value of \"rank\" must not end in '\\', which would continue it onto the next line"],
    ["rank = 1 \\   ", ["rank"], "must not end in '\\'"],
    ["rank = 1 \\\\", ["rank"], "must not end in '\\'"],
    ["rank = a \\ b", ["rank"], [["rank", "a \\ b"]]],
    ["x = 1", [], 'submit command "x" is not allowed on this site'],
    // docs/htcondor.md#submit-file-rules: +X and MY.X are one command, checked by the renderer's
    // own rule.
    ['+SingularityImage = "/cvmfs/img"', ["+SingularityImage"], [["+SingularityImage", '"/cvmfs/img"']]],
    ['MY.SingularityImage = "/cvmfs/img"', ["+SingularityImage"], [["MY.SingularityImage", '"/cvmfs/img"']]],
    ['+singularityimage = "x"', ["MY.SingularityImage"], [["+singularityimage", '"x"']]],
    // Reserved names can never be allowed: the allowlist entry is ignored (and refused at config load).
    ['+InterLinkPodUID = "other"', ["+InterLinkPodUID"], 'submit command "+InterLinkPodUID" is not allowed on this site'],
    ['MY.InterLinkSidecarId = "other"', ["MY.InterLinkSidecarId", "+InterLinkSidecarId"], "is not allowed on this site"],
    ['+Environment = "A=1"', ["+Environment"], "is not allowed on this site"],
    ["+a.b = 1", ["+a.b"], 'line 1: submit command "+a.b": not a job attribute name'],
    ["my-key = 1", ["my-key"], 'line 1: submit command "my-key": not a submit command name'],
  ];
  test.each(submitOptions)("parseSubmitOptions(%p, %j)", (input, allow, expected) => {
    const r = parseSubmitOptions(input, allow);
    if (typeof expected === "string") expect("error" in r ? r.error : "").toContain(expected);
    else expect(r).toEqual({ lines: expected });
  });
});

// ---------------------------------------------------------------------------------------------
// Bad input at plan time. [case, body, config, the field/reason the message must name]

const vol = (volume: Json, data: Json = {}, mount: Json = {}) =>
  pod1({ volumeMounts: [{ name: volume.name, mountPath: "/mnt", ...mount }] }, { volumes: [volume], data });
const envRef = (valueFrom: Json, data: Json = {}) => pod1({ env: [{ name: "V", valueFrom }] }, { data });
const ann = (annotations: Record<string, string>) => makeCreateRequest({ metadata: { annotations } });

const badPlans: [string, Json, Partial<PlanConfig>, string][] = [
  // volume types the execution point cannot provide (docs/pod-to-job.md#volumes)
  [
    "persistentVolumeClaim mounted",
    vol({ name: "data", persistentVolumeClaim: { claimName: "c" } }),
    {},
    'spec.volumes[0]: volume "data" has type "persistentVolumeClaim", which an HTCondor execution point cannot provide',
  ],
  ["csi mounted", vol({ name: "d", csi: { driver: "x" } }), {}, 'volume "d" has type "csi"'],
  ["nfs mounted", vol({ name: "n", nfs: { server: "s", path: "/" } }), {}, 'volume "n" has type "nfs"'],
  // deliberate channels, switched off (docs/threat-model.md#deliberate-code-channels)
  [
    "hostPath, none allowed",
    vol({ name: "h", hostPath: { path: "/etc" } }),
    {},
    'spec.volumes[0].hostPath.path: hostPath volume "h" refused: hostPath volumes are disabled on this site',
  ],
  [
    "hostPath outside the prefixes",
    vol({ name: "h", hostPath: { path: "/data/sharedx" } }),
    { hostPathAllow: ["/data/shared"] },
    'hostPath volume "h" refused: "/data/sharedx" is not under an allowed prefix',
  ],
  ["host image disabled", pod1({ image: "host" }), {}, "spec.containers[0].image: host images are disabled on this site"],
  ["host:<site> image disabled", pod1({ image: "host:t2" }), {}, "host images are disabled on this site"],
  [
    "pre-exec disabled",
    ann({ "slurm-job.vk.io/pre-exec": "touch /tmp/pwned" }),
    { allowPreExec: false },
    'metadata.annotations["slurm-job.vk.io/pre-exec"]: pre-exec is disabled on this site',
  ],
  ["htcondor pre-exec disabled", ann({ "htcondor-job.vk.io/pre-exec": "x" }), { allowPreExec: false }, 'metadata.annotations["htcondor-job.vk.io/pre-exec"]'],
  ["wstunnel disabled", ann({ "interlink.eu/wstunnel-client-commands": "x" }), { allowWstunnel: false }, "wstunnel client commands are disabled on this site"],
  [
    "singularity-options disabled",
    ann({ "htcondor-job.vk.io/singularity-options": "--fakeroot" }),
    {},
    'metadata.annotations["htcondor-job.vk.io/singularity-options"]: singularity-options are disabled on this site',
  ],
  // Kubernetes' probe validation: successThreshold must be 1 for liveness and startup probes; a
  // probe's terminationGracePeriodSeconds is > 0 and not for readiness probes.
  [
    "liveness successThreshold 2",
    pod1({ livenessProbe: { exec: { command: ["true"] }, successThreshold: 2 } }),
    {},
    "spec.containers[0].livenessProbe.successThreshold: 2 must be 1 for a livenessProbe",
  ],
  [
    "startup successThreshold 3",
    pod1({ startupProbe: { tcpSocket: { port: 80 }, successThreshold: 3 } }),
    {},
    "spec.containers[0].startupProbe.successThreshold: 3 must be 1 for a startupProbe",
  ],
  [
    "readiness terminationGracePeriodSeconds",
    pod1({ readinessProbe: { exec: { command: ["true"] }, terminationGracePeriodSeconds: 5 } }),
    {},
    "spec.containers[0].readinessProbe.terminationGracePeriodSeconds: must not be set for a readinessProbe",
  ],
  [
    "liveness terminationGracePeriodSeconds 0",
    pod1({ livenessProbe: { exec: { command: ["true"] }, terminationGracePeriodSeconds: 0 } }),
    {},
    "spec.containers[0].livenessProbe.terminationGracePeriodSeconds: 0 must be greater than 0",
  ],
  // Allowed flags with values that undo the wrapper's own flags cannot work: refused, named.
  [
    "singularity-options --cleanenv=false",
    ann({ "htcondor-job.vk.io/singularity-options": "--cleanenv=false" }),
    { singularityOptionsAllow: ["--cleanenv"] },
    'flag "--cleanenv=false" cannot work: the wrapper runs every container with --cleanenv',
  ],
  [
    "singularity-options --no-eval=false",
    ann({ "htcondor-job.vk.io/singularity-options": "--no-eval=false" }),
    { singularityOptionsAllow: ["--no-eval"] },
    'flag "--no-eval=false" cannot work: the wrapper passes --no-eval',
  ],
  [
    "singularity flag outside the allowlist",
    ann({ "slurm-job.vk.io/singularity-options": "--nv --bind=/:/host" }),
    { singularityOptionsAllow: ["--nv"] },
    'flag "--bind" is not allowed on this site',
  ],
  [
    "singularity option value as its own word",
    ann({ "htcondor-job.vk.io/singularity-options": "--env A=1" }),
    { singularityOptionsAllow: ["--env"] },
    '"A=1" is not a flag; write options with a value as --flag=value',
  ],
  [
    "submit-options outside the allowlist",
    ann({ "htcondor-job.vk.io/submit-options": "executable = /bin/sh" }),
    { submitOptionsAllow: ["request_walltime"] },
    'metadata.annotations["htcondor-job.vk.io/submit-options"]: submit command "executable" is not allowed on this site',
  ],
  ["submit-options injection through a newline", ann({ "htcondor-job.vk.io/submit-options": 'request_walltime = 1\n+Owner = "root"' }), {
    submitOptionsAllow: ["request_walltime"],
  }, 'submit command "+Owner" is not allowed'],
  [
    "submit-options malformed",
    ann({ "htcondor-job.vk.io/submit-options": "request_walltime 1" }),
    { submitOptionsAllow: ["request_walltime"] },
    'line 1: expected "command = value"',
  ],
  [
    "pod-ip annotation is not an IP",
    ann({ "interlink.eu/pod-ip": "$(reboot)" }),
    {},
    'metadata.annotations["interlink.eu/pod-ip"]: "$(reboot)" is not an IP address',
  ],
  // unresolvable valueFrom (docs/interlink.md#the-pod-as-the-virtual-kubelet-sends-it)
  [
    "secretKeyRef to a secret not sent",
    envRef({ secretKeyRef: { name: "db", key: "k" } }),
    {},
    'spec.containers[0].env[0].valueFrom.secretKeyRef.name: env "V" of container "main": secret "db" is not in the create request',
  ],
  [
    "secretKeyRef to a missing key",
    envRef({ secretKeyRef: { name: "db", key: "k" } }, { secrets: [secretObject("db", { other: "x" })] }),
    {},
    'env "V" of container "main": key "k" is not in secret "db"',
  ],
  [
    "configMapKeyRef to a configMap not sent",
    envRef({ configMapKeyRef: { name: "cm", key: "k" } }),
    {},
    'valueFrom.configMapKeyRef.name: env "V" of container "main": configMap "cm" is not in the create request',
  ],
  [
    "configMapKeyRef to a missing key",
    envRef({ configMapKeyRef: { name: "cm", key: "k" } }, { configMaps: [configMapObject("cm", {})] }),
    {},
    'key "k" is not in configMap "cm"',
  ],
  [
    "secret value is not UTF-8",
    envRef({ secretKeyRef: { name: "s", key: "k" } }, { secrets: [{ metadata: { name: "s" }, data: { k: btoa("\u00ff\u00fe") } }] }),
    {},
    'env "V" of container "main": the value is not valid UTF-8',
  ],
  [
    "secret value holds NUL",
    envRef({ secretKeyRef: { name: "s", key: "k" } }, { secrets: [secretObject("s", { k: "a\u0000b" })] }),
    {},
    'env "V" of container "main" must not contain NUL',
  ],
  [
    "secret data not base64",
    envRef({ secretKeyRef: { name: "s", key: "k" } }, { secrets: [{ metadata: { name: "s" }, data: { k: "not base64!" } }] }),
    {},
    'data "k" of secret "s" is not valid base64',
  ],
  [
    "fieldRef unsupported",
    envRef({ fieldRef: { fieldPath: "spec.hostNetwork" } }),
    {},
    'valueFrom.fieldRef.fieldPath: unsupported fieldPath "spec.hostNetwork"',
  ],
  ["fieldRef to all labels in env", envRef({ fieldRef: { fieldPath: "metadata.labels" } }), {}, 'unsupported fieldPath "metadata.labels"'],
  [
    "resourceFieldRef unsupported",
    envRef({ resourceFieldRef: { resource: "limits.hugepages-2Mi" } }),
    {},
    'valueFrom.resourceFieldRef.resource: unsupported resource "limits.hugepages-2Mi"',
  ],
  [
    "resourceFieldRef to an unknown container",
    envRef({ resourceFieldRef: { containerName: "nope", resource: "limits.cpu" } }),
    {},
    'resourceFieldRef.containerName: container "nope" is not in the pod',
  ],
  ["resourceFieldRef divisor zero", envRef({ resourceFieldRef: { resource: "limits.cpu", divisor: "0" } }), {}, "resourceFieldRef.divisor"],
  [
    "limits.ephemeral-storage with no disk at all",
    envRef({ resourceFieldRef: { resource: "limits.ephemeral-storage" } }),
    {},
    "no limit is set and the job requests no disk",
  ],
  // volume data
  [
    "configMap volume not sent",
    vol({ name: "c", configMap: { name: "cm" } }),
    {},
    'spec.volumes[0].configMap.name: configMap "cm" is not in the create request',
  ],
  [
    "secret volume not sent",
    vol({ name: "s", secret: { secretName: "db" } }),
    {},
    'spec.volumes[0].secret.secretName: secret "db" is not in the create request',
  ],
  [
    "configMap item key missing",
    vol({ name: "c", configMap: { name: "cm", items: [{ key: "nope", path: "x" }] } }, { configMaps: [configMapObject("cm", { a: "1" })] }),
    {},
    'spec.volumes[0].configMap.items[0].key: key "nope" is not in configMap "cm"',
  ],
  [
    "items path file/directory conflict",
    vol({ name: "c", configMap: { name: "cm", items: [{ key: "a", path: "x" }, { key: "b", path: "x/y" }] } }, {
      configMaps: [configMapObject("cm", { a: "1", b: "2" })],
    }),
    {},
    'configMap.items[1].path: "x/y" conflicts with "x"',
  ],
  [
    "binaryData not base64",
    vol({ name: "c", configMap: { name: "cm" } }, { configMaps: [configMapObject("cm", null, { b: "@@@@" })] }),
    {},
    'binaryData "b" of configMap "cm" is not valid base64',
  ],
  [
    "downwardAPI resourceFieldRef without containerName",
    vol({ name: "d", downwardAPI: { items: [{ path: "cpu", resourceFieldRef: { resource: "limits.cpu" } }] } }),
    {},
    "downwardAPI.items[0].resourceFieldRef.containerName: is required in a volume",
  ],
  [
    "subPathExpr expanding out of the volume",
    pod1({ env: [{ name: "X", value: "../../etc" }], volumeMounts: [{ name: "v", mountPath: "/v", subPathExpr: "$(X)" }] }, {
      volumes: [{ name: "v", emptyDir: {} }],
    }),
    {},
    "volumeMounts[0].subPathExpr: expands to \"../../etc\" must not contain '..'",
  ],
  ["subPath with : breaks --bind", vol({ name: "v", emptyDir: {} }, {}, { subPath: "a:b" }), {}, "volumeMounts[0].subPath: \"a:b\" must not contain ':', ','"],
  // probes
  ["grpc probe", pod1({ livenessProbe: { grpc: { port: 9000 } } }), {}, "spec.containers[0].livenessProbe.grpc: grpc probes are not supported"],
  [
    "named port unknown",
    pod1({ readinessProbe: { httpGet: { port: "web" } } }),
    {},
    'readinessProbe.httpGet.port: named port "web" is not in the ports of container "main"',
  ],
  ["probe without a handler", pod1({ startupProbe: { periodSeconds: 1 } }), {}, "spec.containers[0].startupProbe: must set a handler"],
  [
    "probe with two handlers",
    pod1({ startupProbe: { exec: { command: ["a"] }, tcpSocket: { port: 1 } } }),
    {},
    "must set only one handler (found exec, tcpSocket)",
  ],
  ["exec probe with no command", pod1({ livenessProbe: { exec: { command: [] } } }), {}, "livenessProbe.exec.command: must not be empty"],
  ["probe port out of range", pod1({ livenessProbe: { tcpSocket: { port: 0 } } }), {}, "livenessProbe.tcpSocket.port: 0 must be a port"],
  [
    "httpGet header with CR/LF",
    pod1({ readinessProbe: { httpGet: { port: 80, httpHeaders: [{ name: "X", value: "a\r\nInjected: 1" }] } } }),
    {},
    "httpHeaders[0].value",
  ],
  ["httpGet path with a newline", pod1({ readinessProbe: { httpGet: { port: 80, path: "/\nGET /admin" } } }), {}, "readinessProbe.httpGet.path"],
  ["negative period", pod1({ readinessProbe: { exec: { command: ["x"] }, periodSeconds: -1 } }), {}, "readinessProbe.periodSeconds: -1 must be >= 0"],
];

describe("bad input at plan time is refused with a one-line reason naming the field", () => {
  test("at least 40 cases", () => expect(badPlans.length).toBeGreaterThanOrEqual(40));
  test.each(badPlans)("%s", (_, body, cfg, fragment) => {
    const err = expectInvalid(() => plan(body, cfg), fragment);
    expect(err.message).toMatch(/^pod "[^"]+\/[^"]+": \S/);
  });
});
