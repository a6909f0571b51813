import type { ConfigMap, PathSeg, RetrievedContainer, Secret } from "../pod.ts";
import { type Ctx, fail } from "./context.ts";

// Bytes

export const utf8 = new TextEncoder();

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

// Request data lookup (docs/interlink.md#volume-data). Each `container[]` entry holds what that
// container mounts; the same objects may appear in several entries. The container's own entry is
// searched first, then the others (same pod, same namespace), so an env `secretKeyRef` also
// resolves when another container of the pod mounts the secret.

export function dataEntries(ctx: Ctx, containerName: string): RetrievedContainer[] {
  const own = ctx.req.container.filter((c) => c.name === containerName);
  return [...own, ...ctx.req.container.filter((c) => c.name !== containerName)];
}

export function findConfigMap(ctx: Ctx, cname: string, name: string): ConfigMap | undefined {
  for (const e of dataEntries(ctx, cname)) {
    const found = e.configMaps.find((m) => m.metadata.name === name);
    if (found) return found;
  }
  return undefined;
}

export function findSecret(ctx: Ctx, cname: string, name: string): Secret | undefined {
  for (const e of dataEntries(ctx, cname)) {
    const found = e.secrets.find((m) => m.metadata.name === name);
    if (found) return found;
  }
  return undefined;
}

export function findProjected(ctx: Ctx, cname: string, volumeName: string): ConfigMap | undefined {
  for (const e of dataEntries(ctx, cname)) {
    const found = e.projectedvolumemaps.find((m) => m.metadata.name === volumeName);
    if (found) return found;
  }
  return undefined;
}

/** A ConfigMap's value for a key as bytes: `data` (UTF-8) or `binaryData` (base64). */
export function configMapBytes(cm: ConfigMap, key: string, ctx: Ctx, path: PathSeg[]): Uint8Array | undefined {
  const text = cm.data[key];
  if (text !== undefined) return utf8.encode(text);
  const b64 = cm.binaryData[key];
  if (b64 === undefined) return undefined;
  return decodeBase64(b64) ?? fail(ctx, path, `binaryData ${ctx.quote(key)} of configMap ${ctx.quote(cm.metadata.name)} is not valid base64`);
}

/** A Secret's value for a key as bytes: `data` (base64) or `stringData` (plain). */
export function secretBytes(s: Secret, key: string, ctx: Ctx, path: PathSeg[]): Uint8Array | undefined {
  const b64 = s.data[key];
  if (b64 !== undefined) {
    return decodeBase64(b64) ?? fail(ctx, path, `data ${ctx.quote(key)} of secret ${ctx.quote(s.metadata.name)} is not valid base64`);
  }
  const text = s.stringData[key];
  return text === undefined ? undefined : utf8.encode(text);
}

export function secretKeys(s: Secret): string[] {
  return [...new Set([...Object.keys(s.data), ...Object.keys(s.stringData)])].sort();
}
export function configMapKeys(cm: ConfigMap): string[] {
  return [...new Set([...Object.keys(cm.data), ...Object.keys(cm.binaryData)])].sort();
}
