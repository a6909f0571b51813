/**
 * planJob: one validated create request (docs/interlink.md#the-create-request) → one JobPlan
 * (core/types.ts). Pure.
 *
 * The plan does what a kubelet would do before starting containers: resolve env (incl. `valueFrom`
 * and `$(VAR)` expansion), lay out volume files, add up resources, apply probe defaults. Whatever
 * the job cannot honour is refused here with a one-line message naming the field, never dropped.
 */
import { hasControlOrLineBreak, SidecarError } from "./errors.ts";
import { headerValueProblem } from "./http-header.ts";
import {
  type ConfigMap,
  type Container,
  type CreateRequest,
  type DownwardAPIFile,
  envNameProblem,
  type EnvVar,
  type KeyToPath,
  KNOWN_VOLUME_SOURCES,
  type LifecycleHandler,
  type PathSeg,
  type Pod,
  podError,
  podLabel,
  type Probe,
  type Quote,
  quote as quoteSpec,
  relativePathProblem,
  requestQuote,
  type ResourceFieldSelector,
  type RetrievedContainer,
  type Secret,
  SHELL_IDENTIFIER,
  type Volume,
  type VolumeMount,
} from "./pod.ts";
import { add, ceil, ceilRatio, fraction, max, parseQuantity, type Quantity, toCpus, toInteger, toKiB, toMiB, tryParseQuantity, ZERO } from "./quantity.ts";
import type { ContainerPlan, Handler, ImageRef, JobPlan, MountPlan, PlanConfig, PodFile, ProbePlan } from "./types.ts";
import { BASH_OWN_VARIABLES, containerKey } from "./types.ts";
import { requestedJobScript, withJobScript } from "./job-script.ts";
// The rules for submit command names and values (submit-rules.ts); the annotation must accept
// exactly what the renderer can write.
import { submitKey, submitValueProblem } from "./submit-rules.ts";
import { chooseFlavor, combineRequirements, FLAVOR_ANNOTATION } from "./flavors.ts";
import { overrideImage } from "./images.ts";

// Annotation keys (docs/interlink.md#annotations).
export const ANNOTATIONS = {
  podIP: "interlink.eu/pod-ip",
  wstunnel: "interlink.eu/wstunnel-client-commands",
  preExec: ["slurm-job.vk.io/pre-exec", "htcondor-job.vk.io/pre-exec"],
  singularityOptions: ["htcondor-job.vk.io/singularity-options", "slurm-job.vk.io/singularity-options"],
  submitOptions: "htcondor-job.vk.io/submit-options",
  imageRoot: ["htcondor-job.knoc.io/image-root", "htcondor-job.vk.io/image-root"],
} as const;

const DEFAULT_FILE_MODE = 0o644;
const SECRET_FILE_MODE = 0o600;
const DEFAULT_HOST = "127.0.0.1";

interface Ctx {
  req: CreateRequest;
  pod: Pod;
  cfg: PlanConfig;
  label: string;
  /**
   * The only quoting for reasons and warnings about the pod: this plan derives values from the
   * request's secrets and configMaps, which it never shows (pod.ts requestQuote).
   */
  quote: Quote;
  podIP?: string;
  hostname: string;
  volumes: Map<string, { volume: Volume; index: number }>;
  /** Pod-level amounts that stand in for node allocatable in `limits.*` resourceFieldRefs. */
  podTotals: { cpu: Quantity; memory: Quantity; disk?: Quantity };
  /** What a container that sets no limit or request counts with (DefaultResources). */
  defaults: Defaults;
  files: PodFile[];
  /** Volume name → sandbox directory, once laid out. */
  volumeDirs: Map<string, string>;
  emptyDirs: string[];
  warnings: string[];
}

function fail(ctx: Ctx, path: readonly PathSeg[], what: string): never {
  throw podError(ctx.label, path, what);
}

// ---------------------------------------------------------------------------------------------
// Kubernetes `$(VAR)` expansion (k8s.io/kubernetes/third_party/forked/golang/expansion): `$$` → `$`,
// `$(NAME)` → its value when defined, else left as written; any other `$` is kept.

export function expandK8s(input: string, lookup: (name: string) => string | undefined): string {
  let out = "";
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] !== "$" || cursor + 1 >= input.length) continue;
    out += input.slice(checkpoint, cursor);
    const rest = input.slice(cursor + 1);
    let advance = 1;
    if (rest[0] === "$") {
      out += "$";
    } else if (rest[0] === "(") {
      const close = rest.indexOf(")", 1);
      if (close === -1) {
        out += "$(";
      } else {
        const name = rest.slice(1, close);
        out += lookup(name) ?? `$(${name})`;
        advance = close + 1;
      }
    } else {
      out += "$" + rest[0];
    }
    cursor += advance;
    checkpoint = cursor + 1;
  }
  return out + input.slice(checkpoint);
}

// ---------------------------------------------------------------------------------------------
// Bytes

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** Go's encoding/json []byte: standard alphabet, padded. */
export function decodeBase64(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  try {
    const bin = atob(text);
    return Uint8Array.from(bin, (ch) => ch.charCodeAt(0));
  } catch {
    return undefined;
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** `env/<key>.env`: `NAME=value\0` records, UTF-8, no other framing. */
export function encodeEnvFile(env: readonly [string, string][]): Uint8Array {
  return concat(env.map(([k, v]) => utf8.encode(`${k}=${v}\0`)));
}

// ---------------------------------------------------------------------------------------------
// Request data lookup (docs/interlink.md#volume-data). Each `container[]` entry holds what that
// container mounts; the same objects may appear in several entries. The container's own entry is
// searched first, then the others (same pod, same namespace), so an env `secretKeyRef` also
// resolves when another container of the pod mounts the secret.

function dataEntries(ctx: Ctx, containerName: string): RetrievedContainer[] {
  const own = ctx.req.container.filter((c) => c.name === containerName);
  return [...own, ...ctx.req.container.filter((c) => c.name !== containerName)];
}

function findConfigMap(ctx: Ctx, cname: string, name: string): ConfigMap | undefined {
  for (const e of dataEntries(ctx, cname)) {
    const found = e.configMaps.find((m) => m.metadata.name === name);
    if (found) return found;
  }
  return undefined;
}

function findSecret(ctx: Ctx, cname: string, name: string): Secret | undefined {
  for (const e of dataEntries(ctx, cname)) {
    const found = e.secrets.find((m) => m.metadata.name === name);
    if (found) return found;
  }
  return undefined;
}

function findProjected(ctx: Ctx, cname: string, volumeName: string): ConfigMap | undefined {
  for (const e of dataEntries(ctx, cname)) {
    const found = e.projectedvolumemaps.find((m) => m.metadata.name === volumeName);
    if (found) return found;
  }
  return undefined;
}

/** A ConfigMap's value for a key as bytes: `data` (UTF-8) or `binaryData` (base64). */
function configMapBytes(cm: ConfigMap, key: string, ctx: Ctx, path: PathSeg[]): Uint8Array | undefined {
  const text = cm.data[key];
  if (text !== undefined) return utf8.encode(text);
  const b64 = cm.binaryData[key];
  if (b64 === undefined) return undefined;
  return decodeBase64(b64) ?? fail(ctx, path, `binaryData ${ctx.quote(key)} of configMap ${ctx.quote(cm.metadata.name)} is not valid base64`);
}

/** A Secret's value for a key as bytes: `data` (base64) or `stringData` (plain). */
function secretBytes(s: Secret, key: string, ctx: Ctx, path: PathSeg[]): Uint8Array | undefined {
  const b64 = s.data[key];
  if (b64 !== undefined) {
    return decodeBase64(b64) ?? fail(ctx, path, `data ${ctx.quote(key)} of secret ${ctx.quote(s.metadata.name)} is not valid base64`);
  }
  const text = s.stringData[key];
  return text === undefined ? undefined : utf8.encode(text);
}

function secretKeys(s: Secret): string[] {
  return [...new Set([...Object.keys(s.data), ...Object.keys(s.stringData)])].sort();
}
function configMapKeys(cm: ConfigMap): string[] {
  return [...new Set([...Object.keys(cm.data), ...Object.keys(cm.binaryData)])].sort();
}

// ---------------------------------------------------------------------------------------------
// Downward API (k8s.io/kubernetes/pkg/fieldpath, pkg/kubelet: podFieldSelectorRuntimeValue)

/** Go's `%q`, as fieldpath.FormatMap uses it. */
function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === "\\") out += "\\" + ch;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\r") out += "\\r";
    else if (c < 0x20 || c === 0x7f) out += "\\x" + c.toString(16).padStart(2, "0");
    else out += ch;
  }
  return out + '"';
}

function formatMap(m: Record<string, string>): string {
  return Object.keys(m)
    .sort()
    .map((k) => `${k}=${goQuote(m[k] ?? "")}`)
    .join("\n");
}

/** A `fieldRef` value; `inVolume` also allows whole `metadata.labels` / `metadata.annotations`. */
function fieldRefValue(fieldPath: string, ctx: Ctx, inVolume: boolean, path: PathSeg[]): string {
  const { metadata, spec, status } = ctx.pod;
  const sub = /^metadata\.(labels|annotations)\['(.*)'\]$/.exec(fieldPath);
  if (sub) {
    const map = sub[1] === "labels" ? metadata.labels : metadata.annotations;
    return Object.hasOwn(map, sub[2]!) ? (map[sub[2]!] ?? "") : "";
  }
  switch (fieldPath) {
    case "metadata.name":
      return metadata.name;
    case "metadata.namespace":
      return metadata.namespace;
    case "metadata.uid":
      return metadata.uid;
    case "spec.nodeName":
      if (!inVolume) return spec.nodeName ?? "";
      break;
    case "spec.serviceAccountName":
      if (!inVolume) return spec.serviceAccountName ?? "";
      break;
    case "status.podIP":
    case "status.podIPs":
      if (!inVolume) {
        if (ctx.podIP === undefined) ctx.warnings.push(`${fieldPath} is not known; using ""`);
        return ctx.podIP ?? "";
      }
      break;
    case "status.hostIP":
    case "status.hostIPs":
      if (!inVolume) {
        if (!status.hostIP) ctx.warnings.push(`${fieldPath} is not known; using ""`);
        return status.hostIP ?? "";
      }
      break;
    case "metadata.labels":
      if (inVolume) return formatMap(metadata.labels);
      break;
    case "metadata.annotations":
      if (inVolume) return formatMap(metadata.annotations);
      break;
  }
  return fail(ctx, path, `unsupported fieldPath ${ctx.quote(fieldPath)}`);
}

const RESOURCE_FIELDS = new Set(["cpu", "memory", "ephemeral-storage"]);

/**
 * A `resourceFieldRef` value, rounded as the kubelet does (ceil of value / divisor; CPU in
 * millicores first). A missing limit stands for node allocatable in Kubernetes; here the slot is
 * the node, so it is the job's request. A missing request defaults to the limit, else to the site
 * default the job counted for the container (see containerAmounts), else 0.
 */
function resourceFieldValue(ref: ResourceFieldSelector, ownName: string, ctx: Ctx, path: PathSeg[]): string {
  const target = ref.containerName || ownName;
  const c = [...ctx.pod.spec.initContainers, ...ctx.pod.spec.containers].find((x) => x.name === target);
  if (!c) fail(ctx, [...path, "containerName"], `container ${ctx.quote(target)} is not in the pod`);
  const m = /^(limits|requests)\.(.+)$/.exec(ref.resource);
  const kind = m?.[1];
  const res = m?.[2] ?? "";
  if (!kind || !RESOURCE_FIELDS.has(res)) {
    return fail(ctx, [...path, "resource"], `unsupported resource ${ctx.quote(ref.resource)} (limits|requests . cpu|memory|ephemeral-storage)`);
  }
  const divisor = ref.divisor === undefined ? fraction(1n) : tryParseQuantity(ref.divisor);
  if (!divisor || divisor.num <= 0n) return fail(ctx, [...path, "divisor"], `${ctx.quote(ref.divisor ?? "")} must be a positive quantity`);
  const limitText = c.resources.limits[res];
  const requestText = c.resources.requests[res];
  let amount: Quantity;
  if (kind === "limits") {
    if (limitText !== undefined) amount = parseQuantity(limitText);
    else {
      const total = res === "cpu" ? ctx.podTotals.cpu : res === "memory" ? ctx.podTotals.memory : ctx.podTotals.disk;
      if (!total) return fail(ctx, [...path, "resource"], `${ref.resource}: no limit is set and the job requests no disk`);
      amount = total;
    }
  } else {
    const t = requestText ?? limitText;
    const dflt = res === "cpu" ? ctx.defaults.cpu : res === "memory" ? ctx.defaults.memory : ctx.defaults.disk;
    amount = t === undefined ? (dflt ?? ZERO) : parseQuantity(t);
  }
  if (res === "cpu") {
    const milli = (q: Quantity) => fraction(ceil(fraction(q.num * 1000n, q.den)));
    return String(ceilRatio(milli(amount), milli(divisor)));
  }
  return String(ceilRatio(fraction(ceil(amount)), fraction(ceil(divisor))));
}

// ---------------------------------------------------------------------------------------------
// Env

function checkEnvValue(value: string, name: string, c: Container, ctx: Ctx, path: PathSeg[]): string {
  if (value.includes("\0")) fail(ctx, path, `env ${ctx.quote(name)} of container ${ctx.quote(c.name)} must not contain NUL`);
  return value;
}

function bytesToEnv(bytes: Uint8Array, name: string, c: Container, ctx: Ctx, path: PathSeg[]): string {
  let s: string;
  try {
    s = strictUtf8.decode(bytes);
  } catch {
    return fail(ctx, path, `env ${ctx.quote(name)} of container ${ctx.quote(c.name)}: the value is not valid UTF-8`);
  }
  return checkEnvValue(s, name, c, ctx, path);
}

/** One `valueFrom`; `undefined` = an optional reference that is missing (the variable is skipped). */
function resolveValueFrom(e: EnvVar, c: Container, ctx: Ctx, path: PathSeg[]): string | undefined {
  const vf = e.valueFrom!;
  const who = `env ${ctx.quote(e.name)} of container ${ctx.quote(c.name)}`;
  if (vf.fieldRef) return checkEnvValue(fieldRefValue(vf.fieldRef.fieldPath, ctx, false, [...path, "fieldRef", "fieldPath"]), e.name, c, ctx, path);
  if (vf.resourceFieldRef) return resourceFieldValue(vf.resourceFieldRef, c.name, ctx, [...path, "resourceFieldRef"]);
  const hint = "interLink sends only objects a container mounts; mount it or set SkipDownwardAPIResolution: true in the virtual kubelet";
  if (vf.secretKeyRef) {
    const r = vf.secretKeyRef;
    const s = findSecret(ctx, c.name, r.name);
    if (!s) {
      return r.optional
        ? undefined
        : fail(ctx, [...path, "secretKeyRef", "name"], `${who}: secret ${ctx.quote(r.name)} is not in the create request (${hint})`);
    }
    const bytes = secretBytes(s, r.key, ctx, [...path, "secretKeyRef", "key"]);
    if (!bytes) {
      return r.optional ? undefined : fail(ctx, [...path, "secretKeyRef", "key"], `${who}: key ${ctx.quote(r.key)} is not in secret ${ctx.quote(r.name)}`);
    }
    return bytesToEnv(bytes, e.name, c, ctx, path);
  }
  if (vf.configMapKeyRef) {
    const r = vf.configMapKeyRef;
    const cm = findConfigMap(ctx, c.name, r.name);
    if (!cm) {
      return r.optional
        ? undefined
        : fail(ctx, [...path, "configMapKeyRef", "name"], `${who}: configMap ${ctx.quote(r.name)} is not in the create request (${hint})`);
    }
    const bytes = configMapBytes(cm, r.key, ctx, [...path, "configMapKeyRef", "key"]);
    if (!bytes) {
      return r.optional
        ? undefined
        : fail(ctx, [...path, "configMapKeyRef", "key"], `${who}: key ${ctx.quote(r.key)} is not in configMap ${ctx.quote(r.name)}`);
    }
    return bytesToEnv(bytes, e.name, c, ctx, path);
  }
  return fail(ctx, path, `${who}: valueFrom names no source`);
}

/**
 * The container's environment in order: HOSTNAME, POD_IP (when known), then `envFrom` (keys sorted),
 * then `env`. Later entries override earlier ones where the wrapper applies them, as in Kubernetes.
 * `env` values expand `$(VAR)` against what is defined before them; `valueFrom` values do not expand.
 */
function planEnv(c: Container, base: PathSeg[], ctx: Ctx): { env: [string, string][]; defined: Map<string, string>; fromData: Map<number, PathSeg[]> } {
  const env: [string, string][] = [["HOSTNAME", ctx.hostname]];
  if (ctx.podIP !== undefined) env.push(["POD_IP", ctx.podIP]);
  // What `$(VAR)` may refer to: the kubelet's expansion map holds only the container's own
  // variables (envFrom, then env entries before this one), not what the runtime adds (HOSTNAME)
  // nor our POD_IP.
  const defined = new Map<string, string>();
  // Records whose value comes from a secret or a configMap, directly or through $(VAR), by index
  // in env, with where the pod asks for them: checkEnvCarriage keeps them off command lines.
  const fromData = new Map<number, PathSeg[]>();
  const dataNames = new Set<string>();
  let at: PathSeg[] | undefined;
  const put = (k: string, v: string) => {
    if (at) fromData.set(env.length, at);
    if (at) dataNames.add(k);
    else dataNames.delete(k);
    env.push([k, v]);
    defined.set(k, v);
  };

  c.envFrom.forEach((src, j) => {
    const p = [...base, "envFrom", j];
    const prefix = src.prefix ?? "";
    const take = (keys: string[], value: (k: string) => Uint8Array | undefined, what: string) => {
      for (const key of keys) {
        const name = prefix + key;
        const problem = envNameProblem(name, ctx.quote);
        if (problem) {
          // The kubelet skips keys that are not valid names (and records an event).
          ctx.warnings.push(`container ${ctx.quote(c.name)}: ${what} key ${ctx.quote(key)} skipped: ${problem}`);
          continue;
        }
        at = p;
        put(name, bytesToEnv(value(key)!, name, c, ctx, p));
        at = undefined;
      }
    };
    if (src.configMapRef) {
      const cm = findConfigMap(ctx, c.name, src.configMapRef.name);
      if (!cm) {
        if (src.configMapRef.optional) return;
        fail(ctx, [...p, "configMapRef", "name"], `configMap ${ctx.quote(src.configMapRef.name)} is not in the create request`);
      }
      take(configMapKeys(cm), (k) => configMapBytes(cm, k, ctx, p), "configMap");
    } else if (src.secretRef) {
      const s = findSecret(ctx, c.name, src.secretRef.name);
      if (!s) {
        if (src.secretRef.optional) return;
        fail(ctx, [...p, "secretRef", "name"], `secret ${ctx.quote(src.secretRef.name)} is not in the create request`);
      }
      take(secretKeys(s), (k) => secretBytes(s, k, ctx, p), "secret");
    }
  });

  c.env.forEach((e, j) => {
    const p = [...base, "env", j];
    if (e.value !== undefined && e.value !== "") {
      const value = expandK8s(e.value, (n) => {
        if (defined.has(n) && dataNames.has(n)) at = p;
        return defined.get(n);
      });
      put(e.name, checkEnvValue(value, e.name, c, ctx, [...p, "value"]));
      at = undefined;
    } else if (e.valueFrom) {
      const v = resolveValueFrom(e, c, ctx, [...p, "valueFrom"]);
      if (e.valueFrom.secretKeyRef || e.valueFrom.configMapKeyRef) at = p;
      if (v !== undefined) put(e.name, v);
      at = undefined;
    } else {
      put(e.name, "");
    }
  });
  return { env, defined, fromData };
}

/**
 * Env names that are not shell identifiers (valid in Kubernetes: docs/pod-to-job.md#env, KEP-4369)
 * cannot travel as APPTAINERENV_<NAME>: Apptainer's action script exports injected variables with a
 * shell and keeps only identifiers. The wrapper sets them with `env NAME=value <command>` inside
 * the container instead, so the container needs a command to put after them (the image's own
 * entrypoint, `run`, cannot be wrapped), and `env` must not read that command's first word as one
 * more variable. A host container gets every variable through `env -i`, so the same applies.
 *
 * Values travel in the environment (of the runtime, or of a host container's process), which only
 * its owner can read; a name that cannot (not a shell identifier; for a host container also the
 * variables bash keeps for itself) travels on a command line, which every user of the worker can
 * read. Such a record is refused when its value comes from a secret or a configMap; a literal
 * value of the pod spec may go there, since whoever can read the pod reads it anyway.
 */
function checkEnvCarriage(c: Container, plan: ContainerPlan, base: PathSeg[], ctx: Ctx, fromData: ReadonlyMap<number, PathSeg[]>): void {
  const delivered = plan.image.kind === "host" || plan.command !== undefined;
  plan.env.forEach(([name], i) => {
    const path = fromData.get(i);
    const onArgv = !SHELL_IDENTIFIER.test(name) || (plan.image.kind === "host" && BASH_OWN_VARIABLES.test(name));
    if (path && delivered && onArgv) {
      const rule = SHELL_IDENTIFIER.test(name) ? "may not be one bash keeps for itself" : "must be a shell identifier";
      fail(
        ctx,
        path,
        `env ${ctx.quote(name)} of container ${ctx.quote(c.name)} takes its value from a secret or configMap, so its name ${rule}: ` +
          `${ctx.quote(name)} could reach the ${
            plan.image.kind === "host" ? "host process" : "container"
          } only on a command line, which every user of the worker can read`,
      );
    }
  });
  if (plan.image.kind === "container" && plan.command === undefined) {
    // Named in env: the pod asks for it, so say why it cannot be. From envFrom only: skipped with
    // a warning, as kubelets before 1.34 skipped such keys.
    for (const [name] of plan.env) {
      if (SHELL_IDENTIFIER.test(name)) continue;
      const j = c.env.findIndex((e) => e.name === name);
      if (j >= 0) {
        fail(
          ctx,
          [...base, "env", j, "name"],
          `${
            ctx.quote(name)
          } is not a shell identifier, which Apptainer can pass only to a command: set command (the image's entrypoint cannot be given it) or rename it`,
        );
      }
      ctx.warnings.push(
        `container ${ctx.quote(c.name)}: envFrom variable ${ctx.quote(name)} skipped: not a shell identifier, and the container has no command to pass it to`,
      );
    }
    plan.env = plan.env.filter(([n]) => SHELL_IDENTIFIER.test(n));
  }
  const odd = plan.env.find(([n]) => !SHELL_IDENTIFIER.test(n))?.[0];
  if (plan.image.kind === "container" && odd === undefined) return;
  const firsts: [PathSeg[], string | undefined][] = [
    plan.command ? [[...base, "command", 0], plan.command[0]] : [[...base, "args", 0], plan.args?.[0]],
  ];
  for (
    const [key, h] of [
      ["startupProbe", plan.startupProbe?.handler],
      ["readinessProbe", plan.readinessProbe?.handler],
      ["livenessProbe", plan.livenessProbe?.handler],
      ["postStart", plan.postStart],
      ["preStop", plan.preStop],
    ] as const
  ) {
    if (h?.kind !== "exec") continue;
    const at: PathSeg[] = key === "postStart" || key === "preStop" ? [...base, "lifecycle", key] : [...base, key];
    firsts.push([[...at, "exec", "command", 0], h.command[0]]);
  }
  for (const [path, word] of firsts) {
    if (word?.includes("=")) {
      fail(
        ctx,
        path,
        `${ctx.quote(word)} must not contain '=': the wrapper starts it with env (for ${
          odd === undefined ? "a host container" : `env ${ctx.quote(odd)}`
        }), which would read it as a variable`,
      );
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Images (docs/interlink.md#annotations-kept-from-the-python-plugin)

const URI = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/**
 * The image the runtime gets and, when the site's ImageOverrides replaced it, the pod's own
 * image for the status (as it would have reached the runtime: `docker://` for a reference).
 */
function planImage(c: Container, base: PathSeg[], ctx: Ctx): { ref: ImageRef; statusImage?: string } {
  const target = overrideImage(c.image, ctx.cfg.imageOverrides);
  if (target === undefined) return { ref: imageRef(c, base, ctx) };
  // Before anything else reads the reference: no image-root prefix, and the runtime never sees
  // the original (docs/pod-to-job.md#image-overrides). Targets are never `host` (config.ts).
  const uri = target.startsWith("/") || URI.test(target) ? target : `docker://${target}`;
  return { ref: { kind: "container", uri }, statusImage: URI.test(c.image) ? c.image : `docker://${c.image}` };
}

function imageRef(c: Container, base: PathSeg[], ctx: Ctx): ImageRef {
  const image = c.image;
  const path = [...base, "image"];
  if (image === "host" || image.startsWith("host:")) {
    if (!ctx.cfg.allowHostImage) fail(ctx, path, "host images are disabled on this site");
    const site = image.slice("host:".length);
    return site ? { kind: "host", site } : { kind: "host" };
  }
  if (URI.test(image)) return { kind: "container", uri: image };
  // Apptainer's other transports have no `//`.
  if (/^(docker-archive|docker-daemon|oci-archive|oci-sif|oci):/.test(image)) return { kind: "container", uri: image };
  if (image === "/cvmfs" || image.startsWith("/cvmfs/")) return { kind: "container", uri: image };
  if (image.startsWith("/")) {
    const annotations = ctx.pod.metadata.annotations;
    const key = ANNOTATIONS.imageRoot.find((k) => annotations[k]);
    const root = key ? annotations[key]!.trim() : "";
    if (key && hasControlOrLineBreak(root)) fail(ctx, ["metadata", "annotations", key], "must not contain control characters or line breaks");
    return { kind: "container", uri: root ? root.replace(/\/+$/, "") + image : image };
  }
  if (image.endsWith(".sif")) return { kind: "container", uri: image };
  return { kind: "container", uri: `docker://${image}` };
}

// ---------------------------------------------------------------------------------------------
// Volumes (docs/interlink.md#volume-data)

function volumeType(v: Volume): string {
  const present = Object.keys(v).filter((k) => k !== "name" && v[k] !== undefined && v[k] !== null);
  // The API server defaults a volume with no source to emptyDir.
  return present[0] ?? "emptyDir";
}

/** Files of one volume: `rel` path → file; a file and a directory of the same name conflict. */
class VolumeFiles {
  readonly files = new Map<string, PodFile>();
  constructor(
    readonly ctx: Ctx,
    readonly name: string,
  ) {}
  add(rel: string, content: Uint8Array, mode: number, secret: boolean, path: PathSeg[]): void {
    const clean = rel.split("/").filter((s) => s !== "" && s !== ".").join("/");
    for (const other of this.files.keys()) {
      if (other !== clean && (other.startsWith(clean + "/") || clean.startsWith(other + "/"))) {
        fail(this.ctx, path, `${this.ctx.quote(rel)} conflicts with ${this.ctx.quote(other)} in volume ${this.ctx.quote(this.name)}`);
      }
    }
    // Secrets are 0600 on the submit side; the wrapper gives them the pod's mode in the sandbox.
    this.files.set(clean, { path: `volumes/${this.name}/${clean}`, content, mode: secret ? SECRET_FILE_MODE : mode, podMode: mode, secret });
  }
}

function keyFiles(
  vf: VolumeFiles,
  keys: string[],
  items: KeyToPath[],
  get: (key: string) => Uint8Array | undefined,
  defaultMode: number,
  optional: boolean,
  what: string,
  secret: boolean,
  itemsPath: PathSeg[],
): void {
  if (items.length === 0) {
    for (const k of keys) vf.add(k, get(k)!, defaultMode, secret, itemsPath);
    return;
  }
  items.forEach((it, j) => {
    const bytes = get(it.key);
    if (!bytes) {
      if (optional) return;
      fail(vf.ctx, [...itemsPath, j, "key"], `key ${vf.ctx.quote(it.key)} is not in ${what}`);
    }
    vf.add(it.path, bytes, it.mode ?? defaultMode, secret, [...itemsPath, j, "path"]);
  });
}

function downwardFiles(vf: VolumeFiles, items: DownwardAPIFile[], defaultMode: number, path: PathSeg[]): void {
  items.forEach((it, j) => {
    const p = [...path, j];
    let value: string;
    if (it.fieldRef) value = fieldRefValue(it.fieldRef.fieldPath, vf.ctx, true, [...p, "fieldRef", "fieldPath"]);
    else {
      const ref = it.resourceFieldRef!;
      if (!ref.containerName) fail(vf.ctx, [...p, "resourceFieldRef", "containerName"], "is required in a volume");
      value = resourceFieldValue(ref, ref.containerName, vf.ctx, [...p, "resourceFieldRef"]);
    }
    vf.add(it.path, utf8.encode(value), it.mode ?? defaultMode, false, [...p, "path"]);
  });
}

/** An empty directory the wrapper creates: used for volumes that carry no files. */
function emptyDirFor(ctx: Ctx, name: string): string {
  if (!ctx.emptyDirs.includes(name)) ctx.emptyDirs.push(name);
  return `emptydir/${name}`;
}

/**
 * Lays out a configMap / secret / projected / downwardAPI volume once (whichever container mounts
 * it first supplies the data) and returns its sandbox directory. A volume with no files becomes
 * an `emptydir/` directory, since files are what make `volumes/<name>` exist.
 */
function dataVolumeDir(v: Volume, vIndex: number, type: string, c: Container, ctx: Ctx): string {
  const done = ctx.volumeDirs.get(v.name);
  if (done !== undefined) return done;
  const vp: PathSeg[] = ["spec", "volumes", vIndex];
  const vf = new VolumeFiles(ctx, v.name);

  if (!ctx.cfg.exportPodData && type !== "downwardAPI") {
    // ExportPodData: false keeps configMap/secret/projected data off the submit side and out of the
    // job. The mount is kept (as an empty read-only directory) so that the container's view of its
    // file system matches the pod spec; a missing mount point would fail the bind instead.
    ctx.warnings.push(`volume ${ctx.quote(v.name)} (${type}) is not exported (ExportPodData is false): mounted as an empty directory`);
  } else if (type === "configMap" && v.configMap) {
    const src = v.configMap;
    const cm = findConfigMap(ctx, c.name, src.name);
    if (!cm && !src.optional) fail(ctx, [...vp, "configMap", "name"], `configMap ${ctx.quote(src.name)} is not in the create request`);
    if (cm) {
      keyFiles(
        vf,
        configMapKeys(cm),
        src.items,
        (k) => configMapBytes(cm, k, ctx, [...vp, "configMap"]),
        src.defaultMode ?? DEFAULT_FILE_MODE,
        src.optional ?? false,
        `configMap ${ctx.quote(src.name)}`,
        false,
        [...vp, "configMap", "items"],
      );
    }
  } else if (type === "secret" && v.secret) {
    const src = v.secret;
    const s = findSecret(ctx, c.name, src.secretName);
    if (!s && !src.optional) fail(ctx, [...vp, "secret", "secretName"], `secret ${ctx.quote(src.secretName)} is not in the create request`);
    if (s) {
      keyFiles(
        vf,
        secretKeys(s),
        src.items,
        (k) => secretBytes(s, k, ctx, [...vp, "secret"]),
        src.defaultMode ?? DEFAULT_FILE_MODE,
        src.optional ?? false,
        `secret ${ctx.quote(src.secretName)}`,
        true,
        [...vp, "secret", "items"],
      );
    }
  } else if (type === "downwardAPI" && v.downwardAPI) {
    downwardFiles(vf, v.downwardAPI.items, v.downwardAPI.defaultMode ?? DEFAULT_FILE_MODE, [...vp, "downwardAPI", "items"]);
  } else if (type === "projected" && v.projected) {
    const src = v.projected;
    const defaultMode = src.defaultMode ?? DEFAULT_FILE_MODE;
    const entry = findProjected(ctx, c.name, v.name);
    if (entry) {
      // Per-path modes from the sources' items; every file is treated as secret (tokens, keys).
      const modes = new Map<string, number>();
      for (const s of src.sources) {
        for (const it of [...(s.configMap?.items ?? []), ...(s.secret?.items ?? []), ...(s.downwardAPI?.items ?? [])]) {
          if (it.mode !== undefined) modes.set(it.path, it.mode);
        }
      }
      const owner = dataEntries(ctx, c.name).find((e) => e.projectedvolumemaps.includes(entry))!;
      const ep: PathSeg[] = ["container", ctx.req.container.indexOf(owner), "projectedvolumemaps", owner.projectedvolumemaps.indexOf(entry)];
      for (const key of configMapKeys(entry)) {
        const bytes = configMapBytes(entry, key, ctx, ep);
        vf.add(key, bytes!, modes.get(key) ?? defaultMode, true, [...ep, "data", key]);
      }
    } else {
      // No data sent (the VK's DisableProjectedVolumes, docs/interlink.md#volume-data): downwardAPI
      // sources can be computed here; the others cannot.
      const missing: string[] = [];
      src.sources.forEach((s, i) => {
        if (s.downwardAPI) downwardFiles(vf, s.downwardAPI.items, defaultMode, [...vp, "projected", "sources", i, "downwardAPI", "items"]);
        if (s.configMap) missing.push(`configMap ${ctx.quote(s.configMap.name)}`);
        if (s.secret) missing.push(`secret ${ctx.quote(s.secret.name)}`);
        if (s.serviceAccountToken) missing.push("serviceAccountToken");
      });
      if (missing.length > 0 || src.sources.length === 0) {
        ctx.warnings.push(
          `projected volume ${ctx.quote(v.name)} arrived without data${missing.length ? ` (${missing.join(", ")} missing)` : ""}: ` +
            `is DisableProjectedVolumes set in the virtual kubelet?`,
        );
      }
    }
  }

  let dir: string;
  if (vf.files.size === 0) dir = emptyDirFor(ctx, v.name);
  else {
    dir = `volumes/${v.name}`;
    ctx.files.push(...vf.files.values());
  }
  ctx.volumeDirs.set(v.name, dir);
  return dir;
}

function joinRel(dir: string, sub: string | undefined): string {
  if (!sub) return dir;
  const parts = sub.split("/").filter((s) => s !== "" && s !== ".");
  return parts.length ? `${dir}/${parts.join("/")}` : dir;
}

function underPrefix(path: string, prefix: string): boolean {
  const p = prefix.length > 1 ? prefix.replace(/\/+$/, "") : prefix;
  return p === "/" || path === p || path.startsWith(p + "/");
}

function planMount(m: VolumeMount, j: number, c: Container, base: PathSeg[], env: Map<string, string>, ctx: Ctx): MountPlan {
  const mp: PathSeg[] = [...base, "volumeMounts", j];
  const entry = ctx.volumes.get(m.name);
  if (!entry) return fail(ctx, [...mp, "name"], `volume ${ctx.quote(m.name)} is not in spec.volumes`);
  const { volume: v, index } = entry;
  const type = volumeType(v);

  let subPath = m.subPath;
  if (m.subPathExpr !== undefined) {
    subPath = expandK8s(m.subPathExpr, (n) => env.get(n));
    const problem = relativePathProblem(subPath, false, ctx.quote);
    if (problem) fail(ctx, [...mp, "subPathExpr"], `expands to ${problem}`);
  }
  const subKey = m.subPathExpr !== undefined ? "subPathExpr" : "subPath";

  let source: MountPlan["source"];
  let readOnly = m.readOnly ?? false;
  switch (type) {
    case "emptyDir":
      source = { kind: "sandbox", path: joinRel(emptyDirFor(ctx, v.name), subPath) };
      break;
    case "configMap":
    case "secret":
    case "projected":
    case "downwardAPI":
      // Kubernetes mounts these read-only whatever the pod says.
      readOnly = true;
      source = { kind: "sandbox", path: joinRel(dataVolumeDir(v, index, type, c, ctx), subPath) };
      break;
    case "hostPath": {
      const hp = v.hostPath!.path;
      if (!ctx.cfg.hostPathAllow.some((prefix) => underPrefix(hp, prefix))) {
        fail(
          ctx,
          ["spec", "volumes", index, "hostPath", "path"],
          ctx.cfg.hostPathAllow.length === 0
            ? `hostPath volume ${ctx.quote(v.name)} refused: hostPath volumes are disabled on this site`
            : `hostPath volume ${ctx.quote(v.name)} refused: ${ctx.quote(hp)} is not under an allowed prefix (${ctx.cfg.hostPathAllow.join(", ")})`,
        );
      }
      // The wrapper checks the resolved path again on the worker (JobPlan.hostPathPrefixes), and
      // that a subPath stays in the volume's own folder (root; a sandbox path's is its first two
      // components, emptydir/<name> or volumes/<name>, which the plan need not say).
      const root = hp.length > 1 ? hp.replace(/\/+$/, "") : hp;
      source = { kind: "host", path: joinRel(root, subPath).replace(/^\/\//, "/") };
      if (source.path !== root) source.root = root;
      break;
    }
    default:
      return fail(
        ctx,
        ["spec", "volumes", index],
        `volume ${ctx.quote(v.name)} has type ${ctx.quote(type)}, which an HTCondor execution point cannot provide (supported: ${
          KNOWN_VOLUME_SOURCES.join(", ")
        })`,
      );
  }
  // After subPathExpr expansion: the same rule as pod.ts applies to the expanded source, and the
  // wrapper binds one line per mount.
  if (/[:,"]/.test(source.path)) {
    fail(ctx, [...mp, subKey], `${ctx.quote(source.path)} must not contain ':', ',' or '"' (Apptainer's --bind syntax cannot express them)`);
  }
  if (hasControlOrLineBreak(source.path)) {
    fail(ctx, [...mp, subKey], `${ctx.quote(source.path)} must not contain control characters or line breaks`);
  }
  // The kubelet makes a relative mountPath absolute (relative to the container's root).
  return { source, target: m.mountPath.startsWith("/") ? m.mountPath : `/${m.mountPath}`, readOnly };
}

// ---------------------------------------------------------------------------------------------
// Probes and lifecycle handlers

function resolvePort(port: number | string, c: Container, path: PathSeg[], ctx: Ctx): number {
  let n: number | undefined;
  if (typeof port === "number") n = port;
  else if (/^\d+$/.test(port)) n = Number(port);
  else {
    n = c.ports.find((p) => p.name === port)?.containerPort;
    if (n === undefined) fail(ctx, path, `named port ${ctx.quote(port)} is not in the ports of container ${ctx.quote(c.name)}`);
  }
  if (!Number.isInteger(n) || n < 1 || n > 65535) fail(ctx, path, `${n} must be a port between 1 and 65535`);
  return n;
}

function noLineBreaks(value: string, path: PathSeg[], ctx: Ctx): string {
  if (hasControlOrLineBreak(value)) fail(ctx, path, `${ctx.quote(value)} must not contain control characters or line breaks`);
  return value;
}

function planHandler(h: Probe | LifecycleHandler, c: Container, path: PathSeg[], ctx: Ctx): Handler {
  const kinds = (["exec", "httpGet", "tcpSocket", "grpc", "sleep"] as const).filter(
    (k) => (h as Record<string, unknown>)[k] !== undefined,
  );
  if (kinds.length !== 1) {
    return fail(ctx, path, kinds.length === 0 ? "must set a handler (exec, httpGet or tcpSocket)" : `must set only one handler (found ${kinds.join(", ")})`);
  }
  const kind = kinds[0]!;
  if (kind === "grpc") return fail(ctx, [...path, "grpc"], "grpc probes are not supported; use exec, httpGet or tcpSocket");
  if (kind === "exec") {
    const command = (h as Probe).exec!.command;
    if (command.length === 0) fail(ctx, [...path, "exec", "command"], "must not be empty");
    return { kind: "exec", command };
  }
  if (kind === "httpGet") {
    const g = (h as Probe).httpGet!;
    const p = [...path, "httpGet"];
    return {
      kind: "httpGet",
      scheme: g.scheme ?? "HTTP",
      host: g.host ? noLineBreaks(g.host, [...p, "host"], ctx) : DEFAULT_HOST,
      port: resolvePort(g.port, c, [...p, "port"], ctx),
      path: g.path ? noLineBreaks(g.path, [...p, "path"], ctx) : "/",
      headers: g.httpHeaders.map((hd, i): [string, string] => {
        if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(hd.name)) fail(ctx, [...p, "httpHeaders", i, "name"], `${ctx.quote(hd.name)} is not an HTTP header name`);
        const why = headerValueProblem(hd.value);
        return [hd.name, why ? fail(ctx, [...p, "httpHeaders", i, "value"], `${ctx.quote(hd.value)} ${why}`) : hd.value];
      }),
    };
  }
  if (kind === "tcpSocket") {
    const t = (h as Probe).tcpSocket!;
    const p = [...path, "tcpSocket"];
    return {
      kind: "tcpSocket",
      host: t.host ? noLineBreaks(t.host, [...p, "host"], ctx) : DEFAULT_HOST,
      port: resolvePort(t.port, c, [...p, "port"], ctx),
    };
  }
  const seconds = (h as LifecycleHandler).sleep!.seconds;
  if (seconds < 0) fail(ctx, [...path, "sleep", "seconds"], `${seconds} must be >= 0`);
  return { kind: "sleep", seconds };
}

/**
 * Kubernetes' defaults (SetDefaults_Probe): an unset or zero field takes the default. And its
 * validation (validateProbe, validateLivenessProbe/StartupProbe/ReadinessProbe): liveness and
 * startup probes need successThreshold 1; a probe's own terminationGracePeriodSeconds is > 0 and
 * only for liveness and startup probes, whose failure kills the container.
 */
function planProbe(p: Probe, kind: "startupProbe" | "readinessProbe" | "livenessProbe", c: Container, path: PathSeg[], ctx: Ctx): ProbePlan {
  const num = (key: "initialDelaySeconds" | "periodSeconds" | "timeoutSeconds" | "successThreshold" | "failureThreshold", dflt: number) => {
    const v = p[key];
    if (v !== undefined && v < 0) fail(ctx, [...path, key], `${v} must be >= 0`);
    return v ? v : dflt;
  };
  const plan: ProbePlan = {
    handler: planHandler(p, c, path, ctx),
    initialDelaySeconds: num("initialDelaySeconds", 0),
    periodSeconds: num("periodSeconds", 10),
    timeoutSeconds: num("timeoutSeconds", 1),
    successThreshold: num("successThreshold", 1),
    failureThreshold: num("failureThreshold", 3),
  };
  if (kind !== "readinessProbe" && plan.successThreshold !== 1) {
    fail(ctx, [...path, "successThreshold"], `${plan.successThreshold} must be 1 for a ${kind}`);
  }
  const grace = p.terminationGracePeriodSeconds;
  if (grace !== undefined) {
    if (kind === "readinessProbe") fail(ctx, [...path, "terminationGracePeriodSeconds"], "must not be set for a readinessProbe");
    if (grace <= 0) fail(ctx, [...path, "terminationGracePeriodSeconds"], `${grace} must be greater than 0`);
    plan.terminationGracePeriodSeconds = grace;
  }
  return plan;
}

// ---------------------------------------------------------------------------------------------
// Resources
//
//   pod field (per container: limits, else requests)  → submit command   rounding
//   ------------------------------------------------------------------------------------------
//   cpu                                                → request_cpus     up to whole CPUs, ≥ 1
//   memory                                             → request_memory   bytes → MiB, up, ≥ 1 (M)
//   ephemeral-storage                                  → request_disk     bytes → KiB, up (K)
//   nvidia.com/gpu, amd.com/gpu, any "<vendor>/gpu"    → request_gpus     whole GPUs
//
// The containers that ask for GPUs get the runtime's GPU support: --rocm for amd.com/gpu, --nv
// for nvidia.com/gpu and any other vendor's (a container asking for both kinds gets both flags).
//
// Pod total per resource = max(sum over containers, max over init containers): containers run
// together, init containers one at a time (Kubernetes' effective request). A container that sets
// neither a limit nor a request for cpu, memory or ephemeral-storage counts with the site default
// (config DefaultResources, disk only if configured), as a LimitRange default would.

const isGpu = (name: string) => name === "gpu" || name.endsWith("/gpu");
const AMD_GPU = "amd.com/gpu";

interface Amounts {
  cpu?: Quantity;
  memory?: Quantity;
  disk?: Quantity;
  gpus: number;
  /** Of gpus, the amd.com/gpu ones. */
  amdGpus: number;
}

/** The site's DefaultResources as quantities (config validated them; a bad one is our bug). */
interface Defaults {
  cpu: Quantity;
  memory: Quantity;
  disk?: Quantity;
}

/**
 * One container's amounts: limit, else request, else the site default for that resource (as a
 * LimitRange default would be, per container: a 100Mi sidecar does not make the whole pod 100Mi).
 */
function containerAmounts(c: Container, defaults: Defaults): Amounts {
  const pick = (name: string) => {
    const t = c.resources.limits[name] ?? c.resources.requests[name];
    return t === undefined ? undefined : parseQuantity(t);
  };
  let gpus = 0;
  let amdGpus = 0;
  for (const name of new Set([...Object.keys(c.resources.limits), ...Object.keys(c.resources.requests)])) {
    if (!isGpu(name)) continue;
    const n = toInteger(pick(name)!);
    gpus += n;
    if (name === AMD_GPU) amdGpus += n;
  }
  return {
    cpu: pick("cpu") ?? defaults.cpu,
    memory: pick("memory") ?? defaults.memory,
    disk: pick("ephemeral-storage") ?? defaults.disk,
    gpus,
    amdGpus,
  };
}

function total(main: (Quantity | undefined)[], init: (Quantity | undefined)[]): Quantity | undefined {
  if (![...main, ...init].some((q) => q !== undefined)) return undefined;
  const sum = main.reduce<Quantity>((s, q) => (q ? add(s, q) : s), ZERO);
  return init.reduce<Quantity>((m, q) => (q ? max(m, q) : m), sum);
}

function configQuantity(text: string, what: string): Quantity {
  const q = tryParseQuantity(text);
  if (!q) throw new SidecarError("internal", `config ${what}: ${quoteSpec(text)} is not a Kubernetes quantity`);
  return q;
}

/** Whether any container of the pod sets `resource` (a limit or a request). */
function podSets(pod: Pod, resource: string): boolean {
  return [...pod.spec.initContainers, ...pod.spec.containers].some((c) =>
    Object.hasOwn(c.resources.limits, resource) || Object.hasOwn(c.resources.requests, resource)
  );
}

/**
 * The job's resources: the containers' amounts added up, and the pod's flavor
 * (docs/pod-to-job.md#flavors). A flavor's Cpu, Memory and Gpus are job-level: each stands in
 * for the total only where no container sets that resource, never per container.
 */
function planResources(pod: Pod, cfg: PlanConfig, label: string, quote: Quote) {
  const defaults: Defaults = {
    cpu: configQuantity(cfg.defaultResources.cpu, "DefaultResources.Cpu"),
    memory: configQuantity(cfg.defaultResources.memory, "DefaultResources.Memory"),
  };
  if (cfg.defaultResources.disk !== undefined) defaults.disk = configQuantity(cfg.defaultResources.disk, "DefaultResources.Disk");
  const initAmounts = pod.spec.initContainers.map((c) => containerAmounts(c, defaults));
  const mainAmounts = pod.spec.containers.map((c) => containerAmounts(c, defaults));
  const podGpus = Math.max(
    mainAmounts.reduce((s, a) => s + a.gpus, 0),
    ...initAmounts.map((a) => a.gpus),
  );
  const choice = chooseFlavor(pod.metadata.annotations[FLAVOR_ANNOTATION], podGpus > 0, cfg.flavors, cfg.defaultFlavor);
  if ("unknown" in choice) {
    const offered = cfg.flavors.length ? `this site offers ${cfg.flavors.map((f) => f.name).join(", ")}` : "this site offers none";
    throw podError(label, annotationPath(FLAVOR_ANNOTATION), `no flavor is named ${quote(choice.unknown)}; ${offered}`);
  }
  const flavor = choice.flavor;
  const fromFlavor = (res: "cpu" | "memory", text: string | undefined) =>
    text !== undefined && !podSets(pod, res) ? configQuantity(text, `Flavors.${flavor!.name}.${res === "cpu" ? "Cpu" : "Memory"}`) : undefined;
  // A pod with no container at all (nothing offloaded) still asks for one container's defaults.
  const cpu = fromFlavor("cpu", flavor?.cpu) ?? total(mainAmounts.map((a) => a.cpu), initAmounts.map((a) => a.cpu)) ?? defaults.cpu;
  const memory = fromFlavor("memory", flavor?.memory) ?? total(mainAmounts.map((a) => a.memory), initAmounts.map((a) => a.memory)) ?? defaults.memory;
  const disk = total(mainAmounts.map((a) => a.disk), initAmounts.map((a) => a.disk)) ?? defaults.disk;
  const gpus = podGpus === 0 && flavor?.gpus ? flavor.gpus : podGpus;
  return { defaults, initAmounts, mainAmounts, cpu, memory, disk, gpus, flavor };
}

// ---------------------------------------------------------------------------------------------
// Annotations: the deliberate code channels and site-policy hooks

function annotationPath(key: string): PathSeg[] {
  return ["metadata", "annotations", key];
}

/**
 * When a singularity-options flag acts. Each container is an Apptainer instance: `instance start`
 * sets up its mounts, namespaces and devices; its main process, probes and hooks are each an
 * `exec`/`run instance://…`, which takes its own environment, working directory and HOME and
 * ignores mount options (the instance has them). Flags not listed act at instance start.
 */
const EXEC_FLAGS = new Set(["--env", "--env-file", "--pwd"]);
/** Bind at instance start, HOME at every exec. */
const START_AND_EXEC_FLAGS = new Set(["--home", "-H", "--no-home"]);
/** Values that undo what the wrapper relies on: byte-exact env and args, a clean environment. */
const CANNOT_WORK: Record<string, string> = {
  "--cleanenv=false": "the wrapper runs every container with --cleanenv (the slot's environment stays out)",
  "-e=false": "the wrapper runs every container with --cleanenv (the slot's environment stays out)",
  "--no-eval=false": "the wrapper passes --no-eval so that env values and arguments reach the container byte for byte",
};

function planSingularityOptions(ctx: Ctx): { start: string[]; exec: string[] } {
  const start: string[] = [];
  const exec: string[] = [];
  const allow = ctx.cfg.singularityOptionsAllow;
  for (const key of ANNOTATIONS.singularityOptions) {
    const text = ctx.pod.metadata.annotations[key];
    if (text === undefined || !text.trim()) continue;
    if (allow.length === 0) fail(ctx, annotationPath(key), "singularity-options are disabled on this site");
    // Whitespace-separated flags; a flag with a value is written `--flag=value` (a lone value
    // token is refused, since it could not be checked against the allowlist).
    for (const tok of text.trim().split(/\s+/)) {
      if (!tok.startsWith("-")) fail(ctx, annotationPath(key), `${ctx.quote(tok)} is not a flag; write options with a value as --flag=value`);
      const flag = tok.split("=")[0]!;
      if (!allow.includes(flag)) fail(ctx, annotationPath(key), `flag ${ctx.quote(flag)} is not allowed on this site (allowed: ${allow.join(" ")})`);
      const why = CANNOT_WORK[tok.toLowerCase()];
      if (why) fail(ctx, annotationPath(key), `flag ${ctx.quote(tok)} cannot work: ${why}`);
      if (EXEC_FLAGS.has(flag) || START_AND_EXEC_FLAGS.has(flag)) exec.push(tok);
      if (!EXEC_FLAGS.has(flag)) start.push(tok);
    }
  }
  return { start, exec };
}

/**
 * `htcondor-job.vk.io/submit-options`: one `command = value` per line (newlines only: `;` may be
 * part of a value); blank lines and lines starting with `#` are skipped. A command must be one the
 * submit renderer can write (its {@link submitKey}: `+X` and `MY.X` are one command) and on the
 * site's allowlist, compared in that canonical form, case-insensitively; values are rendered (and
 * quoted) by render/submit.
 */
export function parseSubmitOptions(text: string, allow: readonly string[]): { lines: [string, string][] } | { error: string } {
  const canonical = (k: string) => {
    const r = submitKey(k);
    return "key" in r ? r.key.toLowerCase() : undefined;
  };
  const allowed = new Set(allow.map(canonical).filter((k) => k !== undefined));
  const lines: [string, string][] = [];
  const rows = text.split(/\r?\n/);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!.trim();
    if (!row || row.startsWith("#")) continue;
    const m = /^([^=\s]+)\s*=\s*(.*)$/.exec(row);
    if (!m) return { error: `line ${i + 1}: expected "command = value", got ${quoteSpec(row)}` };
    const [, command = "", value = ""] = m;
    const key = submitKey(command);
    if ("problem" in key && !key.reserved) return { error: `line ${i + 1}: submit command ${quoteSpec(command)}: ${key.problem}` };
    // A reserved command is never on the allowlist (config refuses it there), so it reads as any
    // other command the site did not allow.
    if (!("key" in key && allowed.has(key.key.toLowerCase()))) {
      return { error: `submit command ${quoteSpec(command)} is not allowed on this site${allow.length ? ` (allowed: ${allow.join(", ")})` : ""}` };
    }
    if (hasControlOrLineBreak(value)) return { error: `line ${i + 1}: the value of ${quoteSpec(command)} must not contain control characters or line breaks` };
    const vp = submitValueProblem(value);
    if (vp) return { error: `line ${i + 1}: the value of ${quoteSpec(command)} ${vp}` };
    lines.push([command, value]);
  }
  return { lines };
}

function planPodIP(pod: Pod, label: string): string | undefined {
  const ip = pod.metadata.annotations[ANNOTATIONS.podIP]?.trim() || pod.status.podIP || undefined;
  if (ip !== undefined && !/^[0-9A-Fa-f.:]+$/.test(ip)) {
    const from = pod.metadata.annotations[ANNOTATIONS.podIP] ? annotationPath(ANNOTATIONS.podIP) : ["status", "podIP"];
    throw podError(label, from, `${quoteSpec(ip)} is not an IP address`);
  }
  return ip;
}

/** Kubernetes' pod hostname: spec.hostname, else the name cut to 63 characters (GeneratePodHostNameAndDomain). */
function podHostname(pod: Pod): string {
  if (pod.spec.hostname) return pod.spec.hostname;
  return pod.metadata.name.length > 63 ? pod.metadata.name.slice(0, 63).replace(/[-.]+$/, "") : pod.metadata.name;
}

// ---------------------------------------------------------------------------------------------

/** A validated create request (see `parseCreateRequest`) and the site's config → the job. */
export function planJob(req: CreateRequest, cfg: PlanConfig): JobPlan {
  const pod = req.pod;
  const { name, namespace, uid, annotations } = pod.metadata;
  const label = podLabel(namespace, name);

  const quote = requestQuote(req);
  const { defaults, initAmounts, mainAmounts, cpu, memory, disk, gpus, flavor } = planResources(pod, cfg, label, quote);

  const ctx: Ctx = {
    req,
    pod,
    cfg,
    label,
    quote,
    podIP: planPodIP(pod, label),
    hostname: podHostname(pod),
    volumes: new Map(pod.spec.volumes.map((volume, index) => [volume.name, { volume, index }])),
    podTotals: { cpu: fraction(BigInt(toCpus(cpu))), memory, disk },
    defaults,
    files: [],
    volumeDirs: new Map(),
    emptyDirs: [],
    warnings: [],
  };

  // Channels first: a refused channel is the clearest message, before any container detail.
  const preExec: string[] = [];
  for (const key of ANNOTATIONS.preExec) {
    const text = annotations[key];
    if (text === undefined || !text.trim()) continue;
    if (!cfg.allowPreExec) fail(ctx, annotationPath(key), "pre-exec is disabled on this site");
    preExec.push(text);
  }
  const backgroundCommands: string[] = [];
  const ws = annotations[ANNOTATIONS.wstunnel];
  if (ws !== undefined && ws.trim()) {
    if (!cfg.allowWstunnel) fail(ctx, annotationPath(ANNOTATIONS.wstunnel), "wstunnel client commands are disabled on this site");
    backgroundCommands.push(ws);
  }
  const runtimeOptions = planSingularityOptions(ctx);
  const podOptions: [string, string][] = [];
  const so = annotations[ANNOTATIONS.submitOptions];
  if (so !== undefined) {
    const r = parseSubmitOptions(so, cfg.submitOptionsAllow);
    if ("error" in r) fail(ctx, annotationPath(ANNOTATIONS.submitOptions), r.error);
    podOptions.push(...r.lines);
  }
  const jobScript = requestedJobScript(req, cfg, label);

  const planContainer = (c: Container, index: number, init: boolean, amounts: Amounts): ContainerPlan => {
    const base: PathSeg[] = ["spec", init ? "initContainers" : "containers", index];
    const { ref: image, statusImage } = planImage(c, base, ctx);
    const { env, defined, fromData } = planEnv(c, base, ctx);
    const lookup = (n: string) => defined.get(n);
    const mounts = c.volumeMounts.map((m, j) => planMount(m, j, c, base, defined, ctx));
    const plan: ContainerPlan = {
      name: c.name,
      init,
      index,
      image,
      env,
      mounts,
      runtimeOptions: [...runtimeOptions.start],
      execOptions: [...runtimeOptions.exec],
      gpus: amounts.gpus,
    };
    if (statusImage !== undefined) plan.statusImage = statusImage;
    if (c.command !== undefined && c.command.length > 0) plan.command = c.command.map((s) => expandK8s(s, lookup));
    if (c.args !== undefined && c.args.length > 0) plan.args = c.args.map((s) => expandK8s(s, lookup));
    if (amounts.amdGpus > 0) plan.amdGpus = amounts.amdGpus;
    if (c.workingDir) plan.workingDir = c.workingDir;
    for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"] as const) {
      const p = c[probe];
      if (p) plan[probe] = planProbe(p, probe, c, [...base, probe], ctx);
    }
    if (c.lifecycle?.postStart) plan.postStart = planHandler(c.lifecycle.postStart, c, [...base, "lifecycle", "postStart"], ctx);
    if (c.lifecycle?.preStop) plan.preStop = planHandler(c.lifecycle.preStop, c, [...base, "lifecycle", "preStop"], ctx);
    checkEnvCarriage(c, plan, base, ctx, fromData);
    ctx.files.push({ path: `env/${containerKey(c.name, init)}.env`, content: encodeEnvFile(plan.env), mode: SECRET_FILE_MODE, secret: true });
    return plan;
  };

  const initContainers = pod.spec.initContainers.map((c, i) => planContainer(c, i, true, initAmounts[i]!));
  // GPUs from the flavor alone: the main containers get them, for --nv.
  const flavorGpus = gpus > 0 && mainAmounts.every((a) => a.gpus === 0) && initAmounts.every((a) => a.gpus === 0);
  const containers = pod.spec.containers.map((c, i) => planContainer(c, i, false, flavorGpus ? { ...mainAmounts[i]!, gpus } : mainAmounts[i]!));
  if (containers.length === 0) ctx.warnings.push("the pod has no offloaded containers: the job runs only its init containers");

  const transferInput = ["env", "volumes"].filter((top) => ctx.files.some((f) => f.path.startsWith(top + "/")));

  // A flavor's group only where the site names none for the namespace: a pod must not leave its
  // namespace's group by picking a flavor.
  const accountingGroup = Object.hasOwn(cfg.accountingGroups, namespace) ? cfg.accountingGroups[namespace] : flavor?.accountingGroup;
  const requirements = combineRequirements(cfg.requirements, flavor?.requirements);
  const plan: JobPlan = {
    uid,
    name,
    namespace,
    sidecarId: cfg.sidecarId,
    batchName: `${namespace}/${name}`,
    restartPolicy: pod.spec.restartPolicy ?? "Always",
    maxRestarts: cfg.maxRestarts,
    restartAfterSuccess: cfg.restartAlwaysAfterSuccess,
    backoffInitialSeconds: cfg.backoffInitialSeconds,
    backoffMaxSeconds: cfg.backoffMaxSeconds,
    terminationGracePeriodSeconds: pod.spec.terminationGracePeriodSeconds ?? 30,
    backgroundCommands,
    preExec,
    runtime: {
      searchPath: [...cfg.runtimeSearchPath],
      noHome: cfg.noHome,
      oldRuntime: cfg.oldRuntime,
    },
    emptyDirs: ctx.emptyDirs,
    hostPathPrefixes: [...cfg.hostPathAllow],
    files: ctx.files,
    transferInput,
    initContainers,
    containers,
    resources: {
      cpus: toCpus(cpu),
      memoryMiB: Math.max(1, toMiB(memory)),
      gpus,
    },
    submit: { lines: [...cfg.extraSubmitLines, ...(flavor?.extraLines ?? [])], podOptions },
    sharedFilesystem: cfg.sharedFilesystem,
    dummy: cfg.dummyJob,
    warnings: ctx.warnings,
  };
  if (disk !== undefined) plan.resources.diskKiB = toKiB(disk);
  if (pod.spec.activeDeadlineSeconds !== undefined) plan.activeDeadlineSeconds = pod.spec.activeDeadlineSeconds;
  if (cfg.commandPrefix) plan.commandPrefix = cfg.commandPrefix;
  if (ctx.podIP !== undefined) plan.podIP = ctx.podIP;
  if (cfg.containerRuntime) plan.runtime.pinned = cfg.containerRuntime;
  if (cfg.apptainerCacheDir) plan.runtime.cacheDir = cfg.apptainerCacheDir;
  if (requirements) plan.submit.requirements = requirements;
  if (accountingGroup) plan.submit.accountingGroup = accountingGroup;
  if (jobScript !== undefined) withJobScript(plan, jobScript, label, ctx.quote);
  return plan;
}
