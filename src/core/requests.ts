/**
 * Request bodies as the routes hand them to the service: parsed and typed at the edge, with
 * the same tolerance interLink's own callers rely on (docs/interlink.md#post-delete,
 * docs/interlink.md#get-status, docs/interlink.md#get-getlogs).
 */
import { SidecarError } from "./errors.ts";
import { type LogRequest, LogRequestSchema } from "./log-options.ts";
import { isPodUid } from "./pod.ts";

/** A pod as /delete and /status name it: its UID, and its name and namespace for messages. */
export interface PodRef {
  uid: string;
  name: string;
  namespace: string;
}

/** The pod a v1.Pod-shaped body names, or undefined when it has no `metadata.uid` string. */
function podRef(body: unknown): PodRef | undefined {
  const md = (body as { metadata?: { uid?: unknown; name?: unknown; namespace?: unknown } } | null)?.metadata;
  if (!md || typeof md.uid !== "string" || md.uid === "") return undefined;
  return { uid: md.uid, name: typeof md.name === "string" ? md.name : "", namespace: typeof md.namespace === "string" ? md.namespace : "" };
}

/** `/delete`: one v1.Pod; its UID is required and must be a UID. */
export function parseDeleteRequest(body: unknown): PodRef {
  const ref = podRef(body);
  if (!ref) throw new SidecarError("invalid", "delete: metadata.uid is missing");
  if (!isPodUid(ref.uid)) {
    throw new SidecarError("invalid", `delete: metadata.uid ${JSON.stringify(ref.uid.slice(0, 64))} must be 1-128 letters, digits or '-'`);
  }
  return ref;
}

/** `/status`: v1.Pods; entries without a `metadata.uid` are skipped, not refused. */
export function parseStatusRequest(body: readonly unknown[]): PodRef[] {
  return body.flatMap((p) => podRef(p) ?? []);
}

/** `/getLogs`: one LogStruct. */
export function parseLogRequest(body: unknown): LogRequest {
  const parsed = LogRequestSchema.safeParse(body);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new SidecarError("invalid", `getLogs: ${i.path.join(".") || "body"}: ${i.message}`);
  }
  return parsed.data;
}
