import { hasControlOrLineBreak } from "../errors.ts";
import { overrideImage } from "../images.ts";
import type { Container, PathSeg } from "../pod.ts";
import type { ImageRef } from "../types.ts";
import { ANNOTATIONS } from "./annotations.ts";
import { type Ctx, fail } from "./context.ts";

// Images (docs/interlink.md#annotations-kept-from-the-python-plugin)

const URI = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/**
 * The image the runtime gets and, when the site's ImageOverrides replaced it, the pod's own
 * image for the status (as it would have reached the runtime: `docker://` for a reference).
 */
export function planImage(c: Container, base: PathSeg[], ctx: Ctx): { ref: ImageRef; statusImage?: string } {
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
