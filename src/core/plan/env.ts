import { type Container, envNameProblem, type EnvVar, type PathSeg, type Pod, SHELL_IDENTIFIER } from "../pod.ts";
import type { ContainerPlan } from "../types.ts";
import { BASH_OWN_VARIABLES } from "../types.ts";
import { type Ctx, fail } from "./context.ts";
import { fieldRefValue, resourceFieldValue } from "./downward.ts";
import { expandK8s } from "./expand.ts";
import { configMapBytes, configMapKeys, findConfigMap, findSecret, secretBytes, secretKeys, utf8 } from "./request-data.ts";

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

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
export function planEnv(c: Container, base: PathSeg[], ctx: Ctx): { env: [string, string][]; defined: Map<string, string>; fromData: Map<number, PathSeg[]> } {
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
export function checkEnvCarriage(c: Container, plan: ContainerPlan, base: PathSeg[], ctx: Ctx, fromData: ReadonlyMap<number, PathSeg[]>): void {
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

/** Kubernetes' pod hostname: spec.hostname, else the name cut to 63 characters (GeneratePodHostNameAndDomain). */
export function podHostname(pod: Pod): string {
  if (pod.spec.hostname) return pod.spec.hostname;
  return pod.metadata.name.length > 63 ? pod.metadata.name.slice(0, 63).replace(/[-.]+$/, "") : pod.metadata.name;
}
