/**
 * Parsing and validating the create request (interLink's `RetrievedPodData`) and the pods of
 * `/delete` and `/status`. The parts live in files named after what they hold, and every name
 * stays importable from here:
 * - pod-schema.ts: structure (zod schemas and their types), lenient where the wire is.
 * - k8s-names.ts: Kubernetes' rules for names, keys and paths.
 * - pod-reason.ts: the JSON path, the quoting of values and the error a reason is made of.
 *
 * Two layers:
 * 1. Structure (zod, pod-schema.ts). Unknown fields are dropped; `null` is accepted wherever an
 *    array, map or object may be absent (docs/interlink.md#check-7).
 * 2. Rules (`parseCreateRequest` only, below). Each field is checked by the rule Kubernetes applies
 *    to it (so no pod the API server accepted is refused), plus what the job itself needs: no NUL in
 *    any string that reaches the job, mount paths Apptainer's `--bind` can express.
 *
 * Every failure is `SidecarError("invalid", 'pod "<ns>/<name>": <json path>: <what is wrong>')`,
 * naming the first problem found.
 */
import type { z } from "zod";
import { hasControlOrLineBreak, SidecarError } from "./errors.ts";
import { configMapKeyProblem, envNameProblem, isDnsLabel, isDnsSubdomain, isPodUid, relativePathProblem } from "./k8s-names.ts";
import { type PathSeg, podError, podLabel, quote, requestQuote } from "./pod-reason.ts";
import {
  type ConfigMap,
  type Container,
  type CreateRequest,
  CreateRequestSchema,
  type DownwardAPIFile,
  type KeyToPath,
  type Pod,
  PodSchema,
  type Secret,
  type Volume,
  type VolumeMount,
} from "./pod-schema.ts";
import { compare, isInteger, isNegative, tryParseQuantity } from "./quantity.ts";

// Importers of pod.ts predate the split; they keep working.
export * from "./k8s-names.ts";
export * from "./pod-reason.ts";
export * from "./pod-schema.ts";

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
// Rules of the create request (pkg/apis/core/validation, applied field by field)

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
