import { hasControlOrLineBreak } from "../errors.ts";
import {
  type Container,
  type DownwardAPIFile,
  type KeyToPath,
  KNOWN_VOLUME_SOURCES,
  type PathSeg,
  relativePathProblem,
  type Volume,
  type VolumeMount,
} from "../pod.ts";
import type { MountPlan, PodFile } from "../types.ts";
import { type Ctx, DEFAULT_FILE_MODE, fail, SECRET_FILE_MODE } from "./context.ts";
import { fieldRefValue, resourceFieldValue } from "./downward.ts";
import { expandK8s } from "./expand.ts";
import { configMapBytes, configMapKeys, dataEntries, findConfigMap, findProjected, findSecret, secretBytes, secretKeys, utf8 } from "./request-data.ts";

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

export function planMount(m: VolumeMount, j: number, c: Container, base: PathSeg[], env: Map<string, string>, ctx: Ctx): MountPlan {
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
