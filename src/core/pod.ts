/**
 * The create request (interLink's `RetrievedPodData`) and the subset of `v1.Pod` the sidecar uses:
 * zod schemas, the types inferred from them, and validation by Kubernetes' own rules.
 *
 * Two layers:
 * 1. Structure (zod). Lenient where the wire is: unknown fields are dropped, and `null` is accepted
 *    wherever an array, map or object may be absent, because Go serializes empty slices as `null`
 *    (docs/interlink.md#the-create-request, docs/interlink.md#check-7). Absent/null lists become
 *    `[]`, maps `{}`, objects `undefined`.
 * 2. Rules (`parseCreateRequest` only). Each field is checked by the rule Kubernetes applies to it
 *    (so no pod the API server accepted is refused), plus what the job itself needs: no NUL in any
 *    string that reaches the job, mount paths Apptainer's `--bind` can express.
 *
 * Every failure is `SidecarError("invalid", 'pod "<ns>/<name>": <json path>: <what is wrong>')`,
 * naming the first problem found.
 */
import { z } from "zod";
import { escapeControls, hasControlOrLineBreak, SidecarError } from "./errors.ts";
import { compare, isInteger, isNegative, tryParseQuantity } from "./quantity.ts";

// ---------------------------------------------------------------------------------------------
// Structure

/** Optional object: null and absent both become undefined. */
const opt = <T extends z.ZodType>(s: T) => s.nullish().transform((v) => v ?? undefined);
/** Optional list: null and absent both become []. */
const list = <T extends z.ZodType>(s: T) => z.array(s).nullish().transform((v) => v ?? []);
/** Optional string map: null and absent both become {}. */
const strMap = () =>
  z
    .record(z.string(), z.string())
    .nullish()
    .transform((v): Record<string, string> => v ?? {});

const int = z.number().int();
/** A Kubernetes quantity arrives as a JSON string, or (Go's Quantity.UnmarshalJSON accepts it) a bare number. */
const quantityText = z.union([z.string(), z.number()]).transform((v) => String(v));
const quantityMap = () =>
  z
    .record(z.string(), quantityText)
    .nullish()
    .transform((v): Record<string, string> => v ?? {});
const intOrString = z.union([int, z.string()]);

const KeyToPathSchema = z.object({ key: z.string(), path: z.string(), mode: opt(int) });

const ObjectFieldSelectorSchema = z.object({ fieldPath: z.string(), apiVersion: opt(z.string()) });
const ResourceFieldSelectorSchema = z.object({
  containerName: opt(z.string()),
  resource: z.string(),
  divisor: opt(quantityText),
});
const KeySelectorSchema = z.object({ name: z.string(), key: z.string(), optional: opt(z.boolean()) });

const EnvVarSchema = z.object({
  name: z.string(),
  value: opt(z.string()),
  valueFrom: opt(
    z.object({
      fieldRef: opt(ObjectFieldSelectorSchema),
      resourceFieldRef: opt(ResourceFieldSelectorSchema),
      configMapKeyRef: opt(KeySelectorSchema),
      secretKeyRef: opt(KeySelectorSchema),
    }),
  ),
});

const EnvFromSchema = z.object({
  prefix: opt(z.string()),
  configMapRef: opt(z.object({ name: z.string(), optional: opt(z.boolean()) })),
  secretRef: opt(z.object({ name: z.string(), optional: opt(z.boolean()) })),
});

const ExecActionSchema = z.object({ command: list(z.string()) });
const HTTPGetActionSchema = z.object({
  path: opt(z.string()),
  port: intOrString,
  host: opt(z.string()),
  scheme: opt(z.enum(["HTTP", "HTTPS"])),
  httpHeaders: list(z.object({ name: z.string(), value: z.string() })),
});
const TCPSocketActionSchema = z.object({ port: intOrString, host: opt(z.string()) });
const GRPCActionSchema = z.object({ port: int, service: opt(z.string()) });
const SleepActionSchema = z.object({ seconds: int });

const ProbeSchema = z.object({
  exec: opt(ExecActionSchema),
  httpGet: opt(HTTPGetActionSchema),
  tcpSocket: opt(TCPSocketActionSchema),
  grpc: opt(GRPCActionSchema),
  initialDelaySeconds: opt(int),
  periodSeconds: opt(int),
  timeoutSeconds: opt(int),
  successThreshold: opt(int),
  failureThreshold: opt(int),
  terminationGracePeriodSeconds: opt(int),
});

const LifecycleHandlerSchema = z.object({
  exec: opt(ExecActionSchema),
  httpGet: opt(HTTPGetActionSchema),
  tcpSocket: opt(TCPSocketActionSchema),
  sleep: opt(SleepActionSchema),
});

const VolumeMountSchema = z.object({
  name: z.string(),
  mountPath: z.string(),
  subPath: opt(z.string()),
  subPathExpr: opt(z.string()),
  readOnly: opt(z.boolean()),
});

const ContainerSchema = z.object({
  name: z.string(),
  image: z.string(),
  command: list(z.string()).optional(),
  args: list(z.string()).optional(),
  workingDir: opt(z.string()),
  env: list(EnvVarSchema),
  envFrom: list(EnvFromSchema),
  ports: list(z.object({ name: opt(z.string()), containerPort: int, protocol: opt(z.string()) })),
  resources: z
    .object({ limits: quantityMap(), requests: quantityMap() })
    .nullish()
    .transform((v) => v ?? { limits: {}, requests: {} }),
  volumeMounts: list(VolumeMountSchema),
  startupProbe: opt(ProbeSchema),
  readinessProbe: opt(ProbeSchema),
  livenessProbe: opt(ProbeSchema),
  lifecycle: opt(z.object({ postStart: opt(LifecycleHandlerSchema), preStop: opt(LifecycleHandlerSchema) })),
  /** Only on init containers: `Always` makes it a sidecar container. */
  restartPolicy: opt(z.string()),
});

const DownwardAPIFileSchema = z.object({
  path: z.string(),
  fieldRef: opt(ObjectFieldSelectorSchema),
  resourceFieldRef: opt(ResourceFieldSelectorSchema),
  mode: opt(int),
});

const ProjectionSchema = z.object({
  configMap: opt(z.object({ name: z.string(), items: list(KeyToPathSchema), optional: opt(z.boolean()) })),
  secret: opt(z.object({ name: z.string(), items: list(KeyToPathSchema), optional: opt(z.boolean()) })),
  downwardAPI: opt(z.object({ items: list(DownwardAPIFileSchema) })),
  serviceAccountToken: opt(
    z.object({ path: z.string(), audience: opt(z.string()), expirationSeconds: opt(int) }),
  ),
});

/** Volume sources the sidecar understands; any other key with a value is a type it cannot provide. */
export const KNOWN_VOLUME_SOURCES = ["configMap", "secret", "projected", "downwardAPI", "emptyDir", "hostPath"] as const;

/** `looseObject`: unknown keys are kept so that an unsupported volume type can be named in the error. */
const VolumeSchema = z.looseObject({
  name: z.string(),
  configMap: opt(
    z.object({ name: z.string(), items: list(KeyToPathSchema), defaultMode: opt(int), optional: opt(z.boolean()) }),
  ),
  secret: opt(
    z.object({
      secretName: z.string(),
      items: list(KeyToPathSchema),
      defaultMode: opt(int),
      optional: opt(z.boolean()),
    }),
  ),
  projected: opt(z.object({ sources: list(ProjectionSchema), defaultMode: opt(int) })),
  downwardAPI: opt(z.object({ items: list(DownwardAPIFileSchema), defaultMode: opt(int) })),
  emptyDir: opt(z.object({ medium: opt(z.string()), sizeLimit: opt(quantityText) })),
  hostPath: opt(z.object({ path: z.string(), type: opt(z.string()) })),
});

export const PodSchema = z.object({
  metadata: z.object({
    name: z.string(),
    namespace: z.string(),
    uid: z.string(),
    labels: strMap(),
    annotations: strMap(),
  }),
  spec: z.object({
    containers: list(ContainerSchema),
    initContainers: list(ContainerSchema),
    volumes: list(VolumeSchema),
    restartPolicy: opt(z.enum(["Always", "OnFailure", "Never"])),
    terminationGracePeriodSeconds: opt(int),
    activeDeadlineSeconds: opt(int),
    nodeName: opt(z.string()),
    serviceAccountName: opt(z.string()),
    hostname: opt(z.string()),
  }),
  status: z
    .object({ podIP: opt(z.string()), hostIP: opt(z.string()), phase: opt(z.string()) })
    .nullish()
    .transform((v): { podIP?: string; hostIP?: string; phase?: string } => v ?? {}),
});

const ConfigMapSchema = z.object({
  metadata: z.object({ name: z.string() }),
  data: strMap(),
  binaryData: strMap(),
});
const SecretSchema = z.object({
  metadata: z.object({ name: z.string() }),
  /** base64 (Go []byte) */
  data: strMap(),
  /** Plain text; interLink never fills it, but a hand-written request may. */
  stringData: strMap(),
  type: opt(z.string()),
});

export const RetrievedContainerSchema = z.object({
  name: z.string(),
  configMaps: list(ConfigMapSchema),
  /** Synthetic ConfigMaps, one per projected volume, named after the VOLUME (docs/interlink.md#volume-data). */
  projectedvolumemaps: list(ConfigMapSchema),
  secrets: list(SecretSchema),
});

export const CreateRequestSchema = z.object({
  pod: PodSchema,
  container: list(RetrievedContainerSchema),
  jobConfig: z.unknown().optional(),
  jobScript: opt(z.string()),
});

export type Pod = z.output<typeof PodSchema>;
export type PodSpec = Pod["spec"];
export type Container = z.output<typeof ContainerSchema>;
export type Volume = z.output<typeof VolumeSchema>;
export type VolumeMount = z.output<typeof VolumeMountSchema>;
export type EnvVar = z.output<typeof EnvVarSchema>;
export type EnvFromSource = z.output<typeof EnvFromSchema>;
export type Probe = z.output<typeof ProbeSchema>;
export type LifecycleHandler = z.output<typeof LifecycleHandlerSchema>;
export type KeyToPath = z.output<typeof KeyToPathSchema>;
export type DownwardAPIFile = z.output<typeof DownwardAPIFileSchema>;
export type ResourceFieldSelector = z.output<typeof ResourceFieldSelectorSchema>;
export type ConfigMap = z.output<typeof ConfigMapSchema>;
export type Secret = z.output<typeof SecretSchema>;
export type RetrievedContainer = z.output<typeof RetrievedContainerSchema>;
export type CreateRequest = z.output<typeof CreateRequestSchema>;

// ---------------------------------------------------------------------------------------------
// Paths and errors

export type PathSeg = string | number;

/** `["spec","containers",0,"resources","limits","nvidia.com/gpu"]` → `spec.containers[0].resources.limits["nvidia.com/gpu"]`. */
export function jsonPath(path: readonly PathSeg[]): string {
  let out = "";
  for (const seg of path) {
    if (typeof seg === "number") out += `[${seg}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(seg)) out += out ? `.${seg}` : seg;
    else out += `[${escapeControls(JSON.stringify(seg))}]`;
  }
  return out || "(body)";
}

/** Quotes a value for a reason: JSON-escaped, with controls and line breaks escaped, shortened. */
export type Quote = (value: string, maxLength?: number) => string;

/**
 * The quoting helper for values of the pod spec itself, which anyone who can read the pod reads
 * anyway. Whatever the planner derives from a request goes through {@link requestQuote} instead.
 */
export const quote: Quote = (value, maxLength = 64) => {
  const v = value.length > maxLength ? `${value.slice(0, maxLength)}…` : value;
  return escapeControls(JSON.stringify(v));
};

/** What a reason shows in place of a value that may come from a secret or a configMap. */
export const WITHHELD = "(a value from a secret or configMap, not shown)";

/**
 * The quoting helper for reasons about one create request. interLink copies a reason into the
 * pod's status, which more people can read than the pod's secrets and configMaps, so a value
 * that may have come from them is never shown: one that contains any value of the request's
 * configMaps, secrets or projected volume maps (decoded, as the planner uses it). Keys are not
 * values: Kubernetes shows them to whoever may describe the object, and a variable made from one
 * (envFrom) must be named to say what to fix (issue 12, class 3).
 * Whatever the planner makes of that data (an env value or name, a `$(VAR)` expansion in
 * command, args or subPathExpr, a file name, a mount path) contains it verbatim, so this finds
 * every derived value without following each derivation. A value that merely happens to contain
 * such a string is withheld too: that costs a less specific reason, never a secret.
 */
export function requestQuote(req: Pick<CreateRequest, "container">): Quote {
  let hidden: string[] | undefined;
  return (value, maxLength) => {
    hidden ??= requestData(req);
    return hidden.some((h) => value.includes(h)) ? WITHHELD : quote(value, maxLength);
  };
}

/** Every non-empty value of the request's configMaps, secrets and projected volume maps. */
function requestData(req: Pick<CreateRequest, "container">): string[] {
  const out = new Set<string>();
  const add = (s: string | undefined) => {
    if (s) out.add(s);
  };
  const text = (map: Record<string, string>) => {
    for (const v of Object.values(map)) add(v);
  };
  const base64 = (map: Record<string, string>) => {
    for (const v of Object.values(map)) {
      add(v);
      add(decodeLenient(v));
    }
  };
  for (const rc of req.container) {
    for (const cm of rc.configMaps) {
      text(cm.data);
      base64(cm.binaryData);
    }
    for (const s of rc.secrets) {
      base64(s.data);
      text(s.stringData);
    }
    for (const pm of rc.projectedvolumemaps) {
      text(pm.data);
      base64(pm.binaryData);
    }
  }
  return [...out];
}

/** base64 as text, for matching only: what decodes, decoded; bytes that are not UTF-8 as U+FFFD. */
function decodeLenient(b64: string): string | undefined {
  try {
    return new TextDecoder().decode(Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0)));
  } catch {
    return undefined;
  }
}

/** `pod "<ns>/<name>"`, as far as the body allows. */
export function podLabel(ns: unknown, name: unknown): string {
  const s = (v: unknown) => (typeof v === "string" && v !== "" ? v : "?");
  return `pod ${quote(`${s(ns)}/${s(name)}`, 140)}`;
}

export function podError(label: string, path: readonly PathSeg[], what: string): SidecarError {
  return new SidecarError("invalid", `${label}: ${jsonPath(withoutDataKeys(path))}: ${what}`);
}

const DATA_OBJECTS = new Set(["configMaps", "secrets", "projectedvolumemaps"]);
const DATA_MAPS = new Set(["data", "binaryData", "stringData"]);

/**
 * A path into a request's configMap, secret or projected volume map stops at its data map: the
 * keys below it are the object's own data (docs/interlink.md#volume-data), which a reason never
 * shows.
 */
function withoutDataKeys(path: readonly PathSeg[]): readonly PathSeg[] {
  const obj = path.findIndex((seg) => typeof seg === "string" && DATA_OBJECTS.has(seg));
  if (obj < 0) return path;
  const map = path.findIndex((seg, i) => i > obj && typeof seg === "string" && DATA_MAPS.has(seg));
  return map < 0 ? path : path.slice(0, map + 1);
}

function zodFailure(label: string, issue: z.core.$ZodIssue, base: readonly PathSeg[]): SidecarError {
  const path = [...base, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))];
  let what = issue.message.replace(/^Invalid (input|option): /, "");
  if (issue.code === "invalid_type" && / received undefined$/.test(issue.message)) what = "is required";
  else if (issue.code === "invalid_union") what = "has the wrong type (expected a number or a string)";
  return podError(label, path, what);
}

function field(obj: unknown, ...keys: string[]): unknown {
  let v = obj;
  for (const k of keys) v = v !== null && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined;
  return v;
}

function describe(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "an array" : typeof v;
}

// ---------------------------------------------------------------------------------------------
// Entry points

/**
 * Parses and validates a `/create` body (one `RetrievedPodData` object,
 * docs/interlink.md#the-create-request). Throws `SidecarError("invalid")` naming the first
 * problem's path.
 */
export function parseCreateRequest(body: unknown): CreateRequest {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new SidecarError(
      "invalid",
      `create request: expected one JSON object with "pod" and "container", got ${describe(body)}`,
    );
  }
  const label = podLabel(field(body, "pod", "metadata", "namespace"), field(body, "pod", "metadata", "name"));
  const r = CreateRequestSchema.safeParse(body);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    // Pod fields are named relative to the pod, as in `kubectl explain`.
    const inPod = issue.path[0] === "pod" && issue.path.length > 1;
    throw zodFailure(label, inPod ? { ...issue, path: issue.path.slice(1) } : issue, []);
  }
  validateCreateRequest(r.data, label);
  return r.data;
}

/**
 * Parses the pod of a `/delete` or `/status` request (docs/interlink.md#post-delete,
 * docs/interlink.md#get-status). Only the identity is checked by Kubernetes' rules: these pods may
 * list containers that were never offloaded, and a status request must not fail on a field the
 * sidecar does not use.
 */
export function parsePod(body: unknown): Pod {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new SidecarError("invalid", `pod: expected a JSON object, got ${describe(body)}`);
  }
  const label = podLabel(field(body, "metadata", "namespace"), field(body, "metadata", "name"));
  const r = PodSchema.safeParse(body);
  if (!r.success) throw zodFailure(label, r.error.issues[0]!, []);
  checkIdentity(r.data, label);
  return r.data;
}

// ---------------------------------------------------------------------------------------------
// Kubernetes' rules (k8s.io/apimachinery/pkg/util/validation, pkg/apis/core/validation)

/** RFC 1123 label, the one copy of it: a subdomain is such labels joined by dots. */
const LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS_LABEL = new RegExp(`^${LABEL}$`);
const DNS_SUBDOMAIN = new RegExp(`^${LABEL}(\\.${LABEL})*$`);
const CONFIG_MAP_KEY = /^[-._a-zA-Z0-9]+$/;
const UID = /^[A-Za-z0-9-]{1,128}$/;

/** Kubernetes' rule for `metadata.uid` (the create path applies it through checkIdentity; delete alone). */
export function isPodUid(uid: string): boolean {
  return UID.test(uid);
}
/**
 * A name a shell (and Apptainer's APPTAINERENV_<NAME>) can carry. Other valid env names reach a
 * container through `env NAME=value` inside it (render/wrapper-lib.bash, load_env).
 */
export const SHELL_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Kubernetes' env var name rule since 1.34 (KEP-4369, RelaxedEnvironmentVariableValidation GA):
 * any printable ASCII character but `=`, not empty. Before, `[-._a-zA-Z][-._a-zA-Z0-9]*`, which
 * this includes. Undefined when valid.
 */
export function envNameProblem(name: string, q: Quote): string | undefined {
  if (name === "") return "must not be empty";
  if (name.includes("=")) return `${q(name)} must not contain '='`;
  if (!/^[\x20-\x7e]+$/.test(name)) return `${q(name)} must consist of printable ASCII characters`;
  return undefined;
}

export function isDnsLabel(s: string): boolean {
  return s.length <= 63 && DNS_LABEL.test(s);
}
function isDnsSubdomain(s: string): boolean {
  return s.length <= 253 && DNS_SUBDOMAIN.test(s);
}

/** Kubernetes' IsConfigMapKey: `[-._a-zA-Z0-9]+`, ≤ 253, not `.`, `..`, nor starting with `..`. */
export function configMapKeyProblem(key: string, q: Quote): string | undefined {
  if (key.length === 0) return "must not be empty";
  if (key.length > 253) return "must be no more than 253 characters";
  if (!CONFIG_MAP_KEY.test(key)) return `${q(key)} must consist of letters, digits, '-', '_' or '.'`;
  if (key === "." || key === "..") return `must not be ${q(key)}`;
  if (key.startsWith("..")) return `${q(key)} must not start with '..'`;
  return undefined;
}

/**
 * Kubernetes' validateLocalDescendingPath (+ validateLocalNonReservedPath when `reserved`):
 * relative, no `..` element, and for volume file paths not starting with `..` (the atomic writer's
 * `..data`).
 */
export function relativePathProblem(p: string, reserved: boolean, q: Quote): string | undefined {
  if (p.includes("\0")) return "must not contain NUL";
  if (p.startsWith("/")) return `${q(p)} must be a relative path`;
  if (p.split("/").includes("..")) return `${q(p)} must not contain '..'`;
  if (reserved && p.startsWith("..")) return `${q(p)} must not start with '..'`;
  return undefined;
}

function checkIdentity(pod: Pod, label: string): void {
  const { name, namespace, uid } = pod.metadata;
  if (!name) throw podError(label, ["metadata", "name"], "must not be empty");
  if (!isDnsSubdomain(name)) {
    throw podError(
      label,
      ["metadata", "name"],
      `${quote(name)} is not a DNS subdomain (lowercase letters, digits, '-' and '.', at most 253)`,
    );
  }
  if (!namespace) throw podError(label, ["metadata", "namespace"], "must not be empty");
  if (!isDnsLabel(namespace)) {
    throw podError(
      label,
      ["metadata", "namespace"],
      `${quote(namespace)} is not a DNS label (lowercase letters, digits and '-', at most 63)`,
    );
  }
  if (!uid) throw podError(label, ["metadata", "uid"], "must not be empty");
  if (!isPodUid(uid)) {
    throw podError(label, ["metadata", "uid"], `${quote(uid)} must be 1-128 letters, digits or '-'`);
  }
  const seen = new Set<string>();
  for (
    const [group, list] of [
      ["initContainers", pod.spec.initContainers],
      ["containers", pod.spec.containers],
    ] as const
  ) {
    list.forEach((c, i) => {
      const p = ["spec", group, i, "name"];
      if (!isDnsLabel(c.name)) {
        throw podError(label, p, `${quote(c.name)} is not a DNS label (lowercase letters, digits and '-', at most 63)`);
      }
      if (seen.has(c.name)) throw podError(label, p, `duplicate container name ${quote(c.name)}`);
      seen.add(c.name);
    });
  }
}

/** First string (key or value) holding NUL, as a path; `skip` names keys whose values are file data. */
function findNul(v: unknown, path: PathSeg[], skip: ReadonlySet<string>): PathSeg[] | undefined {
  if (typeof v === "string") return v.includes("\0") ? path : undefined;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const r = findNul(v[i], [...path, i], skip);
      if (r) return r;
    }
    return undefined;
  }
  if (v !== null && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) {
      if (k.includes("\0")) return [...path, k];
      if (skip.has(k) && x !== null && typeof x === "object") {
        for (const key of Object.keys(x)) if (key.includes("\0")) return [...path, k, key];
        continue;
      }
      const r = findNul(x, [...path, k], skip);
      if (r) return r;
    }
  }
  return undefined;
}

const RESOURCE_CHECKED = ["cpu", "memory", "ephemeral-storage"];

function checkResources(c: Container, base: PathSeg[], label: string): void {
  const parsed: Record<"limits" | "requests", Record<string, ReturnType<typeof tryParseQuantity>>> = {
    limits: {},
    requests: {},
  };
  for (const kind of ["limits", "requests"] as const) {
    for (const [name, text] of Object.entries(c.resources[kind])) {
      const p = [...base, "resources", kind, name];
      const q = tryParseQuantity(text);
      if (!q) throw podError(label, p, `${quote(text)} is not a Kubernetes quantity (e.g. 500m, 2, 1.5Gi, 129e6)`);
      if (isNegative(q)) throw podError(label, p, `${quote(text)} must be greater than or equal to 0`);
      // Extended resources (domain-prefixed, e.g. nvidia.com/gpu) must be whole numbers.
      if (name.includes("/") && !name.startsWith("hugepages-") && !isInteger(q)) {
        throw podError(label, p, `${quote(text)} must be an integer`);
      }
      parsed[kind][name] = q;
    }
  }
  for (const [name, req] of Object.entries(parsed.requests)) {
    const lim = parsed.limits[name];
    if (!req || !lim) continue;
    const p = [...base, "resources", "requests", name];
    if (RESOURCE_CHECKED.includes(name) && compare(req, lim) > 0) {
      throw podError(label, p, `${quote(c.resources.requests[name] ?? "")} must be less than or equal to the limit`);
    }
    if (name.includes("/") && compare(req, lim) !== 0) {
      throw podError(label, p, `must equal the limit for an extended resource`);
    }
  }
}

function checkMode(mode: number | undefined, p: PathSeg[], label: string): void {
  if (mode !== undefined && (mode < 0 || mode > 0o777)) {
    throw podError(label, p, `${mode} must be a file mode between 0 and 0777 (octal), i.e. 0-511`);
  }
}

function checkItems(items: KeyToPath[], base: PathSeg[], label: string): void {
  items.forEach((it, j) => {
    const kp = configMapKeyProblem(it.key, quote);
    if (kp) throw podError(label, [...base, j, "key"], kp);
    if (!it.path) throw podError(label, [...base, j, "path"], "must not be empty");
    const pp = relativePathProblem(it.path, true, quote);
    if (pp) throw podError(label, [...base, j, "path"], pp);
    checkMode(it.mode, [...base, j, "mode"], label);
  });
}

function checkDownwardItems(items: DownwardAPIFile[], base: PathSeg[], label: string): void {
  items.forEach((it, j) => {
    if (!it.path) throw podError(label, [...base, j, "path"], "must not be empty");
    const pp = relativePathProblem(it.path, true, quote);
    if (pp) throw podError(label, [...base, j, "path"], pp);
    if (!it.fieldRef === !it.resourceFieldRef) {
      throw podError(label, [...base, j], "must set exactly one of fieldRef and resourceFieldRef");
    }
    checkMode(it.mode, [...base, j, "mode"], label);
  });
}

function checkVolume(v: Volume, base: PathSeg[], label: string): void {
  if (!isDnsLabel(v.name)) {
    throw podError(label, [...base, "name"], `${quote(v.name)} is not a DNS label (lowercase letters, digits and '-', at most 63)`);
  }
  if (v.configMap) {
    const p = [...base, "configMap"];
    if (!v.configMap.name) throw podError(label, [...p, "name"], "must not be empty");
    checkItems(v.configMap.items, [...p, "items"], label);
    checkMode(v.configMap.defaultMode, [...p, "defaultMode"], label);
  }
  if (v.secret) {
    const p = [...base, "secret"];
    if (!v.secret.secretName) throw podError(label, [...p, "secretName"], "must not be empty");
    checkItems(v.secret.items, [...p, "items"], label);
    checkMode(v.secret.defaultMode, [...p, "defaultMode"], label);
  }
  if (v.downwardAPI) {
    const p = [...base, "downwardAPI"];
    checkDownwardItems(v.downwardAPI.items, [...p, "items"], label);
    checkMode(v.downwardAPI.defaultMode, [...p, "defaultMode"], label);
  }
  if (v.projected) {
    const p = [...base, "projected"];
    checkMode(v.projected.defaultMode, [...p, "defaultMode"], label);
    v.projected.sources.forEach((s, i) => {
      const sp = [...p, "sources", i];
      if (s.configMap) checkItems(s.configMap.items, [...sp, "configMap", "items"], label);
      if (s.secret) checkItems(s.secret.items, [...sp, "secret", "items"], label);
      if (s.downwardAPI) checkDownwardItems(s.downwardAPI.items, [...sp, "downwardAPI", "items"], label);
      if (s.serviceAccountToken) {
        const pp = relativePathProblem(s.serviceAccountToken.path, true, quote);
        if (pp) throw podError(label, [...sp, "serviceAccountToken", "path"], pp);
      }
    });
  }
  if (v.hostPath) {
    const hp = v.hostPath.path;
    const p = [...base, "hostPath", "path"];
    if (!hp.startsWith("/")) throw podError(label, p, `${quote(hp)} must be an absolute path`);
    if (hp.split("/").includes("..")) throw podError(label, p, `${quote(hp)} must not contain '..'`);
    if (BIND_BREAKERS.test(hp)) throw podError(label, p, `${quote(hp)} ${BIND_BREAKERS_MSG}`);
  }
  if (v.emptyDir?.sizeLimit !== undefined && !tryParseQuantity(v.emptyDir.sizeLimit)) {
    throw podError(label, [...base, "emptyDir", "sizeLimit"], `${quote(v.emptyDir.sizeLimit)} is not a Kubernetes quantity`);
  }
  const sources = Object.keys(v).filter((k) => k !== "name" && v[k] !== undefined && v[k] !== null);
  if (sources.length > 1) {
    throw podError(label, base, `may not specify more than one volume type (found ${sources.join(", ")})`);
  }
}

function checkMountPath(m: VolumeMount, p: PathSeg[], label: string): void {
  const mp = m.mountPath;
  if (!mp) throw podError(label, p, "must not be empty");
  // A relative mountPath is accepted, as the API server does: the kubelet makes it absolute.
  if (mp.split("/").includes("..")) throw podError(label, p, `${quote(mp)} must not contain '..'`);
  if (BIND_BREAKERS.test(mp)) throw podError(label, p, `${quote(mp)} ${BIND_BREAKERS_MSG}`);
}

/** Apptainer parses `--bind src:dst[:ro]` lists as CSV: these characters cannot be expressed. */
const BIND_BREAKERS = /[:,"]/;
const BIND_BREAKERS_MSG = `must not contain ':', ',' or '"' (Apptainer's --bind syntax cannot express them)`;

function checkContainer(
  c: Container,
  base: PathSeg[],
  label: string,
  volumes: ReadonlyMap<string, Volume>,
  init: boolean,
): void {
  const img = c.image;
  if (!img.trim()) throw podError(label, [...base, "image"], "must not be empty");
  if (hasControlOrLineBreak(img)) throw podError(label, [...base, "image"], `${quote(img)} must not contain control characters or line breaks`);
  if (img !== img.trim()) throw podError(label, [...base, "image"], `${quote(img)} must not have leading or trailing whitespace`);
  if (init && c.restartPolicy === "Always") {
    throw podError(label, [...base, "restartPolicy"], "sidecar init containers (restartPolicy Always) are not supported");
  }
  c.env.forEach((e, j) => {
    const p = [...base, "env", j];
    const np = envNameProblem(e.name, quote);
    if (np) throw podError(label, [...p, "name"], np);
    if (e.value && e.valueFrom) throw podError(label, [...p, "valueFrom"], "may not be set when value is not empty");
    const vf = e.valueFrom;
    if (vf) {
      const n = [vf.fieldRef, vf.resourceFieldRef, vf.configMapKeyRef, vf.secretKeyRef].filter((x) => x).length;
      if (n !== 1) throw podError(label, [...p, "valueFrom"], "must set exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef");
      for (const ref of ["configMapKeyRef", "secretKeyRef"] as const) {
        const r = vf[ref];
        if (!r) continue;
        if (!r.name) throw podError(label, [...p, "valueFrom", ref, "name"], "must not be empty");
        const kp = configMapKeyProblem(r.key, quote);
        if (kp) throw podError(label, [...p, "valueFrom", ref, "key"], kp);
      }
    }
  });
  c.envFrom.forEach((e, j) => {
    if (!e.configMapRef === !e.secretRef) {
      throw podError(label, [...base, "envFrom", j], "must set exactly one of configMapRef and secretRef");
    }
  });
  checkResources(c, base, label);
  const paths = new Set<string>();
  c.volumeMounts.forEach((m, j) => {
    const p = [...base, "volumeMounts", j];
    if (!volumes.has(m.name)) throw podError(label, [...p, "name"], `volume ${quote(m.name)} is not in spec.volumes`);
    checkMountPath(m, [...p, "mountPath"], label);
    const norm = normalizeAbsolute(m.mountPath);
    if (paths.has(norm)) throw podError(label, [...p, "mountPath"], `${quote(m.mountPath)} is mounted twice`);
    paths.add(norm);
    if (m.subPath !== undefined && m.subPathExpr !== undefined) {
      throw podError(label, [...p, "subPathExpr"], "subPath and subPathExpr are mutually exclusive");
    }
    for (const key of ["subPath", "subPathExpr"] as const) {
      const sp = m[key];
      if (sp === undefined) continue;
      const pp = relativePathProblem(sp, false, quote);
      if (pp) throw podError(label, [...p, key], pp);
      if (BIND_BREAKERS.test(sp)) throw podError(label, [...p, key], `${quote(sp)} ${BIND_BREAKERS_MSG}`);
    }
  });
  c.ports.forEach((port, j) => {
    if (port.containerPort < 1 || port.containerPort > 65535) {
      throw podError(label, [...base, "ports", j, "containerPort"], `${port.containerPort} must be between 1 and 65535`);
    }
  });
}

/** `/a//b/./c/` → `/a/b/c`; a relative `a/b` → `/a/b` (the container's root is the base). */
export function normalizeAbsolute(p: string): string {
  return "/" + p.split("/").filter((s) => s !== "" && s !== ".").join("/");
}

function validateCreateRequest(req: CreateRequest, label: string): void {
  const pod = req.pod;
  checkIdentity(pod, label);

  const nul = findNul(pod, [], new Set()) ??
    findNul(req.container, ["container"], new Set(["data", "binaryData", "stringData"]));
  if (nul) throw podError(label, nul, "must not contain NUL characters");

  const volumes = new Map<string, Volume>();
  pod.spec.volumes.forEach((v, i) => {
    checkVolume(v, ["spec", "volumes", i], label);
    if (volumes.has(v.name)) throw podError(label, ["spec", "volumes", i, "name"], `duplicate volume name ${quote(v.name)}`);
    volumes.set(v.name, v);
  });
  pod.spec.initContainers.forEach((c, i) => checkContainer(c, ["spec", "initContainers", i], label, volumes, true));
  pod.spec.containers.forEach((c, i) => checkContainer(c, ["spec", "containers", i], label, volumes, false));

  const tg = pod.spec.terminationGracePeriodSeconds;
  if (tg !== undefined && tg < 0) throw podError(label, ["spec", "terminationGracePeriodSeconds"], `${tg} must be >= 0`);
  const ad = pod.spec.activeDeadlineSeconds;
  if (ad !== undefined && ad < 1) throw podError(label, ["spec", "activeDeadlineSeconds"], `${ad} must be >= 1`);

  // The keys checked below are the data's own: the reason shows none of them.
  const data = requestQuote(req);
  req.container.forEach((rc, i) => {
    const base: PathSeg[] = ["container", i];
    for (const kind of ["configMaps", "secrets"] as const) {
      rc[kind].forEach((obj, j) => {
        const maps: [string, Record<string, string>][] = kind === "configMaps"
          ? [
            ["data", (obj as ConfigMap).data],
            ["binaryData", (obj as ConfigMap).binaryData],
          ]
          : [
            ["data", (obj as Secret).data],
            ["stringData", (obj as Secret).stringData],
          ];
        for (const [mapName, map] of maps) {
          for (const key of Object.keys(map)) {
            const kp = configMapKeyProblem(key, data);
            if (kp) throw podError(label, [...base, kind, j, mapName, key], kp);
          }
        }
      });
    }
    rc.projectedvolumemaps.forEach((obj, j) => {
      for (const key of [...Object.keys(obj.data), ...Object.keys(obj.binaryData)]) {
        const pp = key ? relativePathProblem(key, true, data) : "must not be empty";
        if (pp) throw podError(label, [...base, "projectedvolumemaps", j, "data", key], pp);
      }
    });
  });
}
