/**
 * Image references and the site's ImageOverrides: a site keeps images unpacked on CVMFS or as
 * prebuilt `.sif` files, and maps the references pods use onto them, so that no job pulls from a
 * registry (docs/pod-to-job.md#image-overrides). Pure.
 *
 * References are compared in the canonical form of the container tools (the grammar of
 * github.com/distribution/reference): `python:3.12-slim`, `docker.io/library/python:3.12-slim`
 * and `docker://python:3.12-slim` are one image, and a missing tag means `:latest`.
 */

const DOCKER_HUB = "docker.io";
const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const DOMAIN = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]+)?$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,}$/;

/** A first component that names a registry: a dot, a port or `localhost` (the container tools' rule). */
function isDomain(first: string): boolean {
  return first === "localhost" || first.includes(".") || first.includes(":");
}

/** The domain and path of a name, Docker Hub's defaults filled in (`library/` for official images). */
function splitName(name: string): { domain: string; path: string } {
  const slash = name.indexOf("/");
  const first = slash < 0 ? "" : name.slice(0, slash);
  let domain = DOCKER_HUB;
  let path = name;
  if (slash >= 0 && isDomain(first)) {
    domain = first === "index.docker.io" ? DOCKER_HUB : first;
    path = name.slice(slash + 1);
  }
  if (domain === DOCKER_HUB && path !== "" && !path.includes("/")) path = `library/${path}`;
  return { domain, path };
}

/**
 * The canonical form of an image reference (`docker.io/library/python:3.12-slim`), or undefined
 * when the text is not one: a path, another transport (`oras://`, `library://`), `host`.
 */
export function canonicalImage(ref: string): string | undefined {
  const text = ref.startsWith("docker://") ? ref.slice("docker://".length) : ref;
  // A `.sif` name is a file (as the planner reads it), not a reference.
  if (text === "" || text.includes("://") || text.endsWith(".sif")) return undefined;
  const at = text.indexOf("@");
  const digest = at < 0 ? undefined : text.slice(at + 1);
  const named = at < 0 ? text : text.slice(0, at);
  if (digest !== undefined && !DIGEST.test(digest)) return undefined;
  const lastSlash = named.lastIndexOf("/");
  const colon = named.indexOf(":", lastSlash + 1);
  const tag = colon < 0 ? undefined : named.slice(colon + 1);
  const name = colon < 0 ? named : named.slice(0, colon);
  if (tag !== undefined && !TAG.test(tag)) return undefined;
  const { domain, path } = splitName(name);
  if (!DOMAIN.test(domain) || path === "" || !path.split("/").every((c) => COMPONENT.test(c))) return undefined;
  const suffix = tag !== undefined ? `:${tag}` : digest === undefined ? ":latest" : "";
  return `${domain}/${path}${suffix}${digest !== undefined ? `@${digest}` : ""}`;
}

/** One validated ImageOverrides entry: an exact reference, or a prefix (the key ended in `*`). */
export interface ImageOverride {
  /** The canonical reference, or the canonical prefix without its `*`. */
  from: string;
  prefix: boolean;
  /** What the runtime gets: a path, a URI, or a reference; for a prefix, without its `*`. */
  to: string;
}

/**
 * A prefix key in canonical form: its text normalised as a reference's name would be (registry
 * and `library/` filled in), nothing appended. `docker.io/*` covers all of Docker Hub.
 */
function canonicalPrefix(text: string): string | undefined {
  const bare = text.startsWith("docker://") ? text.slice("docker://".length) : text;
  if (bare === "" || bare.includes("://") || /\s/.test(bare)) return undefined;
  const slash = bare.indexOf("/");
  if (slash >= 0 && isDomain(bare.slice(0, slash))) {
    const { domain, path } = splitName(bare);
    return path === "" ? `${domain}/` : `${domain}/${path}`;
  }
  return `${DOCKER_HUB}/${slash < 0 ? "library/" : ""}${bare}`;
}

/** Why a target cannot be given to the runtime, or undefined. */
function targetProblem(to: string, prefix: boolean): string | undefined {
  if (to === "") return "must not be empty";
  if (/[\p{Cc}\p{Zl}\p{Zp}\s]/u.test(to)) return "must not contain spaces, control characters or line breaks";
  if (to === "host" || to.startsWith("host:")) return "is the host image: an override must not turn a container into a host command";
  if (to.startsWith("/") || /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(to)) return undefined;
  if (prefix) return canonicalPrefix(to) === undefined ? "is neither an absolute path, a URI nor an image reference" : undefined;
  return canonicalImage(to) === undefined ? "is neither an absolute path (a .sif file or an unpacked folder), a URI nor an image reference" : undefined;
}

/** Parses one ImageOverrides entry: the override, or why the site's file is wrong. */
export function parseImageOverride(key: string, value: string): ImageOverride | { problem: string } {
  const prefix = key.endsWith("*");
  if (prefix !== value.endsWith("*")) return { problem: "a trailing '*' maps a prefix and must end both the image and its target" };
  const keyText = prefix ? key.slice(0, -1) : key;
  const to = prefix ? value.slice(0, -1) : value;
  if (keyText.includes("*") || to.includes("*")) return { problem: "only one trailing '*' is allowed" };
  const from = prefix ? canonicalPrefix(keyText) : canonicalImage(keyText);
  if (from === undefined) {
    return { problem: prefix ? "is not the start of an image reference (e.g. ghcr.io/org/*)" : "is not an image reference (e.g. python:3.12-slim)" };
  }
  const problem = targetProblem(to, prefix);
  if (problem) return { problem: `the target ${problem}` };
  return { from, prefix, to };
}

/**
 * What the runtime runs instead of `image`, or undefined when no entry covers it. An exact entry
 * wins over prefixes; among prefixes, the longest.
 */
export function overrideImage(image: string, overrides: readonly ImageOverride[]): string | undefined {
  const canonical = canonicalImage(image);
  if (canonical === undefined) return undefined;
  const exact = overrides.find((o) => !o.prefix && o.from === canonical);
  if (exact) return exact.to;
  let best: ImageOverride | undefined;
  for (const o of overrides) {
    if (o.prefix && canonical.startsWith(o.from) && (!best || o.from.length > best.from.length)) best = o;
  }
  return best ? best.to + canonical.slice(best.from.length) : undefined;
}
