// docs/interlink.md#the-create-request (the create request),
// docs/interlink.md#the-pod-as-the-virtual-kubelet-sends-it (the pod), docs/interlink.md#check-7
// (null for absent lists); each case is a 4xx with a one-line reason naming
// the field.
import { describe, expect, test } from "bun:test";
import { hasControlOrLineBreak } from "../../src/core/errors.ts";
import { jsonPath, parseCreateRequest, parsePod, podError, quote, requestQuote, WITHHELD } from "../../src/core/pod.ts";
import { changed, DEFAULT_UID, expectInvalid, type Json, makeCreateRequest, makePod, richCreateRequest } from "../fixtures/pods.ts";

describe("parseCreateRequest accepts what interLink sends", () => {
  test("a minimal pod", () => {
    const req = parseCreateRequest(makeCreateRequest());
    expect(req.pod.metadata).toMatchObject({ name: "web-1", namespace: "default", uid: DEFAULT_UID });
    expect(req.pod.spec.containers.map((c) => c.name)).toEqual(["main"]);
    expect(req.container[0]?.configMaps).toEqual([]);
  });

  test("the rich example", () => {
    const req = parseCreateRequest(richCreateRequest());
    expect(req.pod.spec.initContainers.map((c) => c.name)).toEqual(["fetch", "migrate"]);
    expect(req.pod.spec.volumes).toHaveLength(7);
    expect(req.container[2]?.projectedvolumemaps[0]?.metadata.name).toBe("kube-api-access-x7k2p");
  });

  // docs/interlink.md#the-create-request: an empty list arrives as null
  test("null wherever a list, map or object may be absent", () => {
    const body = makeCreateRequest({
      metadata: { labels: null, annotations: null },
      spec: {
        initContainers: null,
        volumes: null,
        containers: [
          {
            name: "main",
            image: "busybox",
            command: null,
            args: null,
            env: null,
            envFrom: null,
            ports: null,
            volumeMounts: null,
            resources: { limits: null, requests: null },
            lifecycle: null,
            livenessProbe: null,
          },
        ],
      },
      status: null,
      container: null,
    });
    const req = parseCreateRequest(body);
    const c = req.pod.spec.containers[0]!;
    expect(c.env).toEqual([]);
    expect(c.command).toEqual([]);
    expect(c.resources).toEqual({ limits: {}, requests: {} });
    expect(req.pod.metadata.annotations).toEqual({});
    expect(req.container).toEqual([]);
  });

  test("unknown fields are ignored, at every level", () => {
    const body = changed(makeCreateRequest(), (r) => {
      r.extra = 1;
      r.pod.kind = "Pod";
      r.pod.spec.tolerations = [{ key: "virtual-node.interlink/no-schedule", operator: "Exists" }];
      r.pod.spec.containers[0].securityContext = { runAsUser: 1000 };
      r.container[0].emptyDirs = ["x"];
    });
    const req = parseCreateRequest(body);
    expect((req as Json).extra).toBeUndefined();
    expect((req.pod.spec as Json).tolerations).toBeUndefined();
  });

  test("quantities may be JSON numbers (Go's Quantity.UnmarshalJSON accepts them)", () => {
    const body = makeCreateRequest({ spec: { containers: [{ name: "main", image: "busybox", resources: { limits: { cpu: 2, memory: 1e9 } } }] } });
    expect(parseCreateRequest(body).pod.spec.containers[0]?.resources.limits).toEqual({ cpu: "2", memory: "1000000000" });
  });

  // Names Kubernetes accepts must be accepted.
  const validNames: [string, string][] = [
    ["pod name with dots", "web.v1.example"],
    ["pod name of 253 characters", `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(61)}`],
    ["pod name starting with a digit", "1-job"],
  ];
  test.each(validNames)("%s", (_, name) => {
    expect(parseCreateRequest(makeCreateRequest({ metadata: { name } })).pod.metadata.name).toBe(name);
  });

  test("env names with lowercase and underscores, mount paths with spaces", () => {
    const body = makeCreateRequest({
      spec: {
        volumes: [{ name: "v", emptyDir: {} }],
        containers: [
          {
            name: "main",
            image: "busybox",
            env: [{ name: "_lower_case1", value: "x" }],
            volumeMounts: [{ name: "v", mountPath: "/my data/dir", subPath: "a/b.c" }],
          },
        ],
      },
    });
    expect(() => parseCreateRequest(body)).not.toThrow();
  });

  // docs/pod-to-job.md#env (a v1.Pod as the API server accepted it): env names are any printable
  // ASCII but '=' since Kubernetes 1.34 (KEP-4369), [-._a-zA-Z][-._a-zA-Z0-9]* before.
  const validEnvNames = ["A-B", "my.var", "1VAR", "-dash", ".dot", "x y", "$(not-run)", "`id`", "a'b\"c", "~!@#%^&*()[]{}|\\;:,<>?/"];
  test.each(validEnvNames)("env name %p is accepted", (name) => {
    const body = makeCreateRequest({ spec: { containers: [{ name: "main", image: "busybox", command: ["true"], env: [{ name, value: "x" }] }] } });
    expect(parseCreateRequest(body).pod.spec.containers[0]?.env[0]?.name).toBe(name);
  });

  // The kubelet makes a relative mountPath absolute (it is relative to the container's root).
  test("a relative mountPath is accepted", () => {
    const body = makeCreateRequest({
      spec: { volumes: [{ name: "v", emptyDir: {} }], containers: [{ name: "main", image: "busybox", volumeMounts: [{ name: "v", mountPath: "data/dir" }] }] },
    });
    expect(parseCreateRequest(body).pod.spec.containers[0]?.volumeMounts[0]?.mountPath).toBe("data/dir");
  });
});

describe("parsePod (for /delete and /status)", () => {
  test("checks identity only", () => {
    const pod = changed(makePod(), (p) => {
      p.spec.containers[0].env = [{ name: "my.dotted", value: "ok in Kubernetes ≥ 1.30" }];
    });
    expect(parsePod(pod).metadata.uid).toBe(DEFAULT_UID);
  });
  const bad: [string, unknown, string][] = [
    ["an array", [], "expected a JSON object, got an array"],
    ["no uid", changed(makePod(), (p) => delete p.metadata.uid), "metadata.uid: is required"],
    ["a bad namespace", makePod({ metadata: { namespace: "Default" } }), "metadata.namespace"],
  ];
  test.each(bad)("refuses %s", (_, body, fragment) => {
    expectInvalid(() => parsePod(body), fragment);
  });
});

describe("quote: a value on one line, whatever it holds (docs/threat-model.md#7-reasons-on-one-line-by-unicodes-rules)", () => {
  test.each([
    ["LF", "a\nb", '"a\\nb"'],
    ["NEL U+0085", "a\u0085b", '"a\\u0085b"'],
    ["LINE SEPARATOR", "a\u2028b", '"a\\u2028b"'],
    ["PARAGRAPH SEPARATOR", "a\u2029b", '"a\\u2029b"'],
    ["DEL", "a\u007fb", '"a\\u007fb"'],
    ["quote and backslash", 'a"b\\c', '"a\\"b\\\\c"'],
  ])("%s", (_, value, shown) => {
    expect(quote(value)).toBe(shown);
    expect(hasControlOrLineBreak(quote(value))).toBe(false);
  });
  test("long values are shortened after escaping nothing away", () => expect(quote("x".repeat(100), 8)).toBe('"xxxxxxxx…"'));
  test.each(["a\u2028b", "a\u2029b", "a\u0085b"])("a pod name holding %j comes back escaped, on one line", (name) => {
    const err = expectInvalid(() => parseCreateRequest(makeCreateRequest({ metadata: { name } })), "metadata.name");
    expect(hasControlOrLineBreak(err.message)).toBe(false);
    expect(err.message).toContain(quote(name));
  });
});

describe("requestQuote: reasons never show what a secret or configMap holds (docs/threat-model.md#5-error-reasons-echo-secret-values)", () => {
  const req = {
    container: [
      {
        name: "main",
        configMaps: [{ metadata: { name: "cm" }, data: { "cm-key": "cm-value" }, binaryData: { bin: btoa("bin-value") } }],
        secrets: [{ metadata: { name: "s" }, data: { "s-key": btoa("s3cr3t") }, stringData: { plain: "pl41n" }, type: undefined }],
        projectedvolumemaps: [{ metadata: { name: "p" }, data: { "dir//./token": "t0ken" }, binaryData: {} }],
      },
    ],
  };
  const q = requestQuote(req);
  test.each([
    ["a configMap value", "cm-value"],
    ["a decoded binaryData value", "bin-value"],
    ["a decoded secret value", "s3cr3t"],
    ["the secret value as sent (base64)", btoa("s3cr3t")],
    ["a stringData value", "pl41n"],
    ["a projected value", "t0ken"],
    ["an expansion that used a secret", "../s3cr3t/x"],
    ["a mount source made from a secret", "volumes/v/pl41n:x"],
  ])("withholds %s", (_, value) => expect(q(value)).toBe(WITHHELD));
  test.each(["main", "cm", "s", "/etc/app", ""])("shows %j, which holds none of it", (value) => expect(q(value)).toBe(quote(value)));
  // Keys are not values: Kubernetes shows them to whoever may describe the object, and a variable
  // made from one (envFrom) must be named to say what to fix (docs/threat-model.md#3-secret-values-on-command-lines).
  test.each(["cm-key", "s-key", "dir//./token", "PREFIX_cm-key"])("shows the key or a name made from one: %j", (value) => expect(q(value)).toBe(quote(value)));
  test("empty data values hide nothing", () => {
    const q2 = requestQuote({
      container: [{ name: "m", configMaps: [{ metadata: { name: "c" }, data: { k: "" }, binaryData: {} }], secrets: [], projectedvolumemaps: [] }],
    });
    expect(q2("anything")).toBe('"anything"');
  });
  test("a path into a data map stops at the map: its keys are data", () => {
    const err = podError('pod "d/p"', ["container", 0, "secrets", 1, "data", "s3cr3t-key", "x"], "is wrong");
    expect(err.message).toBe('pod "d/p": container[0].secrets[1].data: is wrong');
    const spec = podError('pod "d/p"', ["spec", "volumes", 0, "secret", "items", 0, "key"], "is wrong");
    expect(spec.message).toBe('pod "d/p": spec.volumes[0].secret.items[0].key: is wrong');
  });
  test("a value of the wrong type in a secret's data names the map, not the key", () => {
    const body = makeCreateRequest({ container: [{ name: "main", secrets: [{ metadata: { name: "s" }, data: { "s3cr3t-key": 7 } }] }] });
    const err = expectInvalid(() => parseCreateRequest(body), "container[0].secrets[0].data:");
    expect(err.message).not.toContain("s3cr3t-key");
  });
});

test("jsonPath", () => {
  expect(jsonPath(["spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"])).toBe(
    'spec.containers[0].resources.limits["nvidia.com/gpu"]',
  );
  expect(jsonPath(["metadata", "annotations", "interlink.eu/pod-ip"])).toBe('metadata.annotations["interlink.eu/pod-ip"]');
  expect(jsonPath([])).toBe("(body)");
});

// ---------------------------------------------------------------------------------------------
// Bad input. [case, body, the field the message must name]

const c0 = (r: Json) => r.pod.spec.containers[0];
const withVolume = (volume: Json, mount: Json = { name: volume.name, mountPath: "/mnt" }) =>
  changed(makeCreateRequest(), (r) => {
    r.pod.spec.volumes = [volume];
    c0(r).volumeMounts = [mount];
  });
const base = makeCreateRequest();
const mod = (fn: (r: Json) => void) => changed(base, fn);

const badInput: [string, unknown, string][] = [
  // docs/interlink.md#the-create-request — one JSON object
  ["body is an array", [makeCreateRequest()], "expected one JSON object"],
  ["body is null", null, "got null"],
  ["body is a string", "pod", "got string"],
  ["pod missing", { container: [] }, "pod: is required"],
  ["pod is a list", { pod: [], container: [] }, "pod: expected object"],
  // docs/interlink.md#the-pod-as-the-virtual-kubelet-sends-it — identity
  ["uid missing", mod((r) => delete r.pod.metadata.uid), "metadata.uid: is required"],
  ["name missing", mod((r) => delete r.pod.metadata.name), "metadata.name: is required"],
  ["namespace missing", mod((r) => delete r.pod.metadata.namespace), "metadata.namespace: is required"],
  ["name is a number", mod((r) => (r.pod.metadata.name = 42)), "metadata.name: expected string"],
  ["uid empty", mod((r) => (r.pod.metadata.uid = "")), "metadata.uid: must not be empty"],
  ["uid with /", mod((r) => (r.pod.metadata.uid = "a/b")), "metadata.uid"],
  ["uid with ..", mod((r) => (r.pod.metadata.uid = "..")), "metadata.uid"],
  ["uid of 129 characters", mod((r) => (r.pod.metadata.uid = "a".repeat(129))), "metadata.uid"],
  ["name with uppercase", mod((r) => (r.pod.metadata.name = "Web-1")), 'metadata.name: "Web-1" is not a DNS subdomain'],
  ["name with /", mod((r) => (r.pod.metadata.name = "web/1")), "metadata.name"],
  ["name with ..", mod((r) => (r.pod.metadata.name = "a..b")), "metadata.name"],
  ["name of 254 characters", mod((r) => (r.pod.metadata.name = "a".repeat(254))), "metadata.name"],
  ["namespace with a dot", mod((r) => (r.pod.metadata.namespace = "team.a")), 'metadata.namespace: "team.a" is not a DNS label'],
  ["namespace of 64 characters", mod((r) => (r.pod.metadata.namespace = "n".repeat(64))), "metadata.namespace"],
  ["NUL in the name", mod((r) => (r.pod.metadata.name = "web\u00001")), "metadata.name"],
  // containers
  ["containers is an object", mod((r) => (r.pod.spec.containers = {})), "spec.containers: expected array"],
  ["container name uppercase", mod((r) => (c0(r).name = "Main")), 'spec.containers[0].name: "Main" is not a DNS label'],
  ["container name with _", mod((r) => (c0(r).name = "my_app")), "spec.containers[0].name"],
  ["container name with /", mod((r) => (c0(r).name = "a/b")), "spec.containers[0].name"],
  ["duplicate container names", mod((r) => r.pod.spec.containers.push({ ...c0(r) })), 'spec.containers[1].name: duplicate container name "main"'],
  [
    "init and main container share a name",
    mod((r) => (r.pod.spec.initContainers = [{ name: "main", image: "busybox" }])),
    "spec.containers[0].name: duplicate container name",
  ],
  ["image empty", mod((r) => (c0(r).image = "")), "spec.containers[0].image: must not be empty"],
  ["image with a newline", mod((r) => (c0(r).image = "busybox\n; touch /tmp/pwned")), "spec.containers[0].image"],
  ["image with leading space", mod((r) => (c0(r).image = " busybox")), "spec.containers[0].image"],
  ["image missing", mod((r) => delete c0(r).image), "spec.containers[0].image: is required"],
  ["command with NUL", mod((r) => (c0(r).command = ["sh", "-c", "echo\u0000x"])), "spec.containers[0].command[2]: must not contain NUL"],
  ["args not strings", mod((r) => (c0(r).args = [1, 2])), "spec.containers[0].args[0]: expected string"],
  ["workingDir with NUL", mod((r) => (c0(r).workingDir = "/w\u0000")), "spec.containers[0].workingDir"],
  ["restartPolicy unknown", mod((r) => (r.pod.spec.restartPolicy = "Sometimes")), "spec.restartPolicy"],
  [
    "sidecar init container",
    mod((r) => (r.pod.spec.initContainers = [{ name: "proxy", image: "envoy", restartPolicy: "Always" }])),
    "spec.initContainers[0].restartPolicy: sidecar init containers",
  ],
  ["negative grace period", mod((r) => (r.pod.spec.terminationGracePeriodSeconds = -1)), "spec.terminationGracePeriodSeconds"],
  ["zero active deadline", mod((r) => (r.pod.spec.activeDeadlineSeconds = 0)), "spec.activeDeadlineSeconds"],
  ["containerPort out of range", mod((r) => (c0(r).ports = [{ containerPort: 70000 }])), "spec.containers[0].ports[0].containerPort"],
  ["probe port is a boolean", mod((r) => (c0(r).livenessProbe = { tcpSocket: { port: true } })), "spec.containers[0].livenessProbe.tcpSocket.port"],
  // env
  ["env is a string", mod((r) => (c0(r).env = "A=1")), "spec.containers[0].env: expected array"],
  // Kubernetes' own rule (KEP-4369): printable ASCII but '=', not empty.
  ["env name empty", mod((r) => (c0(r).env = [{ name: "", value: "x" }])), "spec.containers[0].env[0].name: must not be empty"],
  ["env name with =", mod((r) => (c0(r).env = [{ name: "A=B", value: "x" }])), "spec.containers[0].env[0].name: \"A=B\" must not contain '='"],
  ["env name with a tab", mod((r) => (c0(r).env = [{ name: "A\tB", value: "x" }])), 'env[0].name: "A\\tB" must consist of printable ASCII characters'],
  ["env name with a newline", mod((r) => (c0(r).env = [{ name: "A\nB", value: "x" }])), 'env[0].name: "A\\nB" must consist of printable ASCII characters'],
  ["env name not ASCII", mod((r) => (c0(r).env = [{ name: "CAFÉ", value: "x" }])), 'env[0].name: "CAFÉ" must consist of printable ASCII characters'],
  ["env name with DEL", mod((r) => (c0(r).env = [{ name: "A\u007f", value: "x" }])), "must consist of printable ASCII characters"],
  ["env name with NUL", mod((r) => (c0(r).env = [{ name: "A\u0000", value: "x" }])), "spec.containers[0].env[0].name: must not contain NUL"],
  ["env value with NUL", mod((r) => (c0(r).env = [{ name: "A", value: "x\u0000y" }])), "spec.containers[0].env[0].value: must not contain NUL"],
  [
    "value and valueFrom both",
    mod((r) => (c0(r).env = [{ name: "A", value: "x", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }])),
    "spec.containers[0].env[0].valueFrom: may not be set when value is not empty",
  ],
  [
    "valueFrom with two sources",
    mod((r) => (c0(r).env = [{ name: "A", valueFrom: { fieldRef: { fieldPath: "metadata.name" }, secretKeyRef: { name: "s", key: "k" } } }])),
    "spec.containers[0].env[0].valueFrom: must set exactly one",
  ],
  [
    "secretKeyRef key with /",
    mod((r) => (c0(r).env = [{ name: "A", valueFrom: { secretKeyRef: { name: "s", key: "../k" } } }])),
    "spec.containers[0].env[0].valueFrom.secretKeyRef.key",
  ],
  // resources (docs/interlink.md#the-pod-as-the-virtual-kubelet-sends-it: its values are quantity
  // strings)
  [
    "invalid cpu quantity",
    mod((r) => (c0(r).resources = { limits: { cpu: "1.5 cores" } })),
    'spec.containers[0].resources.limits.cpu: "1.5 cores" is not a Kubernetes quantity',
  ],
  ["invalid memory quantity", mod((r) => (c0(r).resources = { requests: { memory: "1GB" } })), "spec.containers[0].resources.requests.memory"],
  ["negative memory", mod((r) => (c0(r).resources = { limits: { memory: "-1Gi" } })), 'resources.limits.memory: "-1Gi" must be greater than or equal to 0'],
  ["fractional GPU", mod((r) => (c0(r).resources = { limits: { "nvidia.com/gpu": "0.5" } })), 'resources.limits["nvidia.com/gpu"]: "0.5" must be an integer'],
  ["request above limit", mod((r) => (c0(r).resources = { limits: { cpu: "1" }, requests: { cpu: "2" } })), "resources.requests.cpu"],
  ["resources is a string", mod((r) => (c0(r).resources = "big")), "spec.containers[0].resources: expected object"],
  // volumes and mounts (docs/interlink.md#volume-data)
  ["volume name uppercase", withVolume({ name: "Data", emptyDir: {} }), "spec.volumes[0].name"],
  [
    "duplicate volume names",
    mod((r) => (r.pod.spec.volumes = [{ name: "v", emptyDir: {} }, { name: "v", emptyDir: {} }])),
    "spec.volumes[1].name: duplicate volume name",
  ],
  ["two volume types", withVolume({ name: "v", emptyDir: {}, hostPath: { path: "/x" } }), "spec.volumes[0]: may not specify more than one volume type"],
  [
    "relative mountPath mounted twice (the kubelet makes it absolute)",
    changed(withVolume({ name: "v", emptyDir: {} }), (r) => c0(r).volumeMounts.push({ name: "v", mountPath: "mnt" })),
    'volumeMounts[1].mountPath: "mnt" is mounted twice',
  ],
  ["mountPath with ..", withVolume({ name: "v", emptyDir: {} }, { name: "v", mountPath: "/data/../etc" }), "volumeMounts[0].mountPath"],
  [
    "mountPath with :",
    withVolume({ name: "v", emptyDir: {} }, { name: "v", mountPath: "/data:/etc" }),
    "volumeMounts[0].mountPath: \"/data:/etc\" must not contain ':', ',' or '\"' (Apptainer's --bind syntax cannot express them)",
  ],
  ["mountPath with ,", withVolume({ name: "v", emptyDir: {} }, { name: "v", mountPath: "/a,/b" }), "Apptainer's --bind"],
  ["mountPath empty", withVolume({ name: "v", emptyDir: {} }, { name: "v", mountPath: "" }), "volumeMounts[0].mountPath: must not be empty"],
  [
    "mount of an unknown volume",
    withVolume({ name: "v", emptyDir: {} }, { name: "w", mountPath: "/w" }),
    'volumeMounts[0].name: volume "w" is not in spec.volumes',
  ],
  [
    "same mountPath twice",
    changed(withVolume({ name: "v", emptyDir: {} }), (r) => c0(r).volumeMounts.push({ name: "v", mountPath: "/mnt/" })),
    'volumeMounts[1].mountPath: "/mnt/" is mounted twice',
  ],
  [
    "subPath absolute",
    withVolume({ name: "v", emptyDir: {} }, { name: "v", mountPath: "/m", subPath: "/etc" }),
    'volumeMounts[0].subPath: "/etc" must be a relative path',
  ],
  ["subPath escaping", withVolume({ name: "v", emptyDir: {} }, { name: "v", mountPath: "/m", subPath: "a/../../b" }), "volumeMounts[0].subPath"],
  ["subPathExpr escaping", withVolume({ name: "v", emptyDir: {} }, { name: "v", mountPath: "/m", subPathExpr: "../$(X)" }), "volumeMounts[0].subPathExpr"],
  [
    "configMap item key with ../",
    withVolume({ name: "v", configMap: { name: "c", items: [{ key: "../x", path: "x" }] } }),
    "spec.volumes[0].configMap.items[0].key",
  ],
  ["configMap item key ..", withVolume({ name: "v", configMap: { name: "c", items: [{ key: "..", path: "x" }] } }), 'configMap.items[0].key: must not be ".."'],
  [
    "configMap item path absolute",
    withVolume({ name: "v", configMap: { name: "c", items: [{ key: "k", path: "/etc/passwd" }] } }),
    'configMap.items[0].path: "/etc/passwd" must be a relative path',
  ],
  ["configMap item path escaping", withVolume({ name: "v", configMap: { name: "c", items: [{ key: "k", path: "a/../../b" }] } }), "configMap.items[0].path"],
  ["configMap item path ..data", withVolume({ name: "v", configMap: { name: "c", items: [{ key: "k", path: "..data" }] } }), "configMap.items[0].path"],
  [
    "configMap item mode too large",
    withVolume({ name: "v", configMap: { name: "c", items: [{ key: "k", path: "k", mode: 0o1000 }] } }),
    "configMap.items[0].mode",
  ],
  ["secret defaultMode negative", withVolume({ name: "v", secret: { secretName: "s", defaultMode: -1 } }), "spec.volumes[0].secret.defaultMode"],
  ["secret without a name", withVolume({ name: "v", secret: { secretName: "" } }), "spec.volumes[0].secret.secretName: must not be empty"],
  [
    "downwardAPI item path escaping",
    withVolume({ name: "v", downwardAPI: { items: [{ path: "../x", fieldRef: { fieldPath: "metadata.name" } }] } }),
    "downwardAPI.items[0].path",
  ],
  ["hostPath relative", withVolume({ name: "v", hostPath: { path: "data" } }), "spec.volumes[0].hostPath.path"],
  ["hostPath with ..", withVolume({ name: "v", hostPath: { path: "/data/../etc" } }), "spec.volumes[0].hostPath.path"],
  ["emptyDir sizeLimit invalid", withVolume({ name: "v", emptyDir: { sizeLimit: "lots" } }), "spec.volumes[0].emptyDir.sizeLimit"],
  // the data interLink forwards
  ["container data is an object", mod((r) => (r.container = { main: {} })), "container: expected array"],
  ["configMaps not a list", mod((r) => (r.container[0].configMaps = "cm")), "container[0].configMaps: expected array"],
  [
    "configMap data key with /",
    mod((r) => (r.container[0].configMaps = [{ metadata: { name: "c" }, data: { "a/b": "x" } }])),
    'container[0].configMaps[0].data: "a/b" must consist of',
  ],
  [
    "secret data key ..",
    mod((r) => (r.container[0].secrets = [{ metadata: { name: "s" }, data: { "..": "eA==" } }])),
    'container[0].secrets[0].data: must not be ".."',
  ],
  [
    "projected key escaping",
    mod((r) => (r.container[0].projectedvolumemaps = [{ metadata: { name: "p" }, data: { "../token": "t" } }])),
    "container[0].projectedvolumemaps[0].data: (a value from a secret or configMap, not shown) must not contain",
  ],
  [
    "projected key absolute",
    mod((r) => (r.container[0].projectedvolumemaps = [{ metadata: { name: "p" }, data: { "/token": "t" } }])),
    "must be a relative path",
  ],
  // NUL anywhere that reaches the job
  [
    "NUL in an annotation value",
    mod((r) => (r.pod.metadata.annotations = { "slurm-job.vk.io/pre-exec": "echo\u0000" })),
    'metadata.annotations["slurm-job.vk.io/pre-exec"]: must not contain NUL',
  ],
  ["NUL in a label key", mod((r) => (r.pod.metadata.labels = { "a\u0000": "b" })), "metadata.labels"],
];

describe("bad input is refused with a one-line reason naming the field", () => {
  test("at least 40 cases", () => expect(badInput.length).toBeGreaterThanOrEqual(40));
  test.each(badInput)("%s", (_, body, fragment) => {
    const err = expectInvalid(() => parseCreateRequest(body), fragment);
    if (body !== null && typeof body === "object" && !Array.isArray(body) && "pod" in body) {
      expect(err.message).toMatch(/^pod "[^"]*\/[^"]*": /);
    }
  });
});
