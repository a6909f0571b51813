/**
 * `MY.InterLinkContainers`: the pod's offloaded containers, so that a sidecar whose store was
 * lost can adopt the job again. "i.init-a c.main c.side": container keys (core/types.ts), which
 * are plain tokens since names are DNS labels, so the value survives chirp and -json alike.
 */
import { isDnsLabel } from "./pod.ts";
import { containerKey } from "./types.ts";

interface ListedContainer {
  name: string;
  init: boolean;
}

export function formatContainerList(containers: readonly ListedContainer[]): string {
  return containers.map((c) => containerKey(c.name, c.init)).join(" ");
}

/** The containers of a job ad's list; undefined when it is missing or malformed. */
export function parseContainerList(v: unknown): { name: string; init: boolean; image: string }[] | undefined {
  if (typeof v !== "string" || v.trim() === "") return undefined;
  const out = [];
  for (const tok of v.trim().split(/\s+/)) {
    const m = /^([ic])\.(.+)$/.exec(tok);
    if (!m || !isDnsLabel(m[2]!)) return undefined;
    out.push({ name: m[2]!, init: m[1] === "i", image: "" });
  }
  return out;
}
