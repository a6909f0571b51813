import type { PathSeg, ResourceFieldSelector } from "../pod.ts";
import { ceil, ceilRatio, fraction, parseQuantity, type Quantity, tryParseQuantity, ZERO } from "../quantity.ts";
import { type Ctx, fail } from "./context.ts";

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
export function fieldRefValue(fieldPath: string, ctx: Ctx, inVolume: boolean, path: PathSeg[]): string {
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
export function resourceFieldValue(ref: ResourceFieldSelector, ownName: string, ctx: Ctx, path: PathSeg[]): string {
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
