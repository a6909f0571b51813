/**
 * How a reason about a pod names what is wrong: the JSON path of the field (never a key of a
 * secret's or configMap's data), the quoting of a value (withheld when it may come from a secret
 * or configMap), and the `SidecarError("invalid", 'pod "<ns>/<name>": <path>: <what>')` itself.
 */
import { escapeControls, SidecarError } from "./errors.ts";
import type { CreateRequest } from "./pod-schema.ts";

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
 * (envFrom) must be named to say what to fix (docs/threat-model.md#3-secret-values-on-command-lines).
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
