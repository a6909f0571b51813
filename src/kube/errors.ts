/**
 * Errors from the API server, carrying its HTTP status and its own `message`. A 403 also says
 * which RBAC verb on which resource the operator's identity lacks, so that a missing rule in
 * deploy/rbac.yaml reads as one (docs/operator.md#rbac).
 */
import { type ErrorKind, SidecarError } from "../core/errors.ts";
import type { Verb } from "./resources.ts";

export interface KubeRequestInfo {
  verb: Verb;
  /** As RBAC names it: `htcjobs.htc.cern.ch/status`. */
  resource: string;
  namespace?: string;
  name?: string;
}

export class KubeApiError extends SidecarError {
  readonly status: number;
  /** The Status object's `reason` (Forbidden, NotFound, Conflict, Gone, Expired, …), if any. */
  readonly reason: string | undefined;
  /** The Status object's `message`, or the start of a body that was not a Status. */
  readonly apiMessage: string;
  readonly request: KubeRequestInfo;
  constructor(request: KubeRequestInfo, status: number, reason: string | undefined, apiMessage: string) {
    super(kindOf(status), describe(request, status, reason, apiMessage));
    this.name = "KubeApiError";
    this.status = status;
    this.reason = reason;
    this.apiMessage = apiMessage;
    this.request = request;
  }
}

/** The API server could not be reached, or the connection broke. */
export class KubeUnreachableError extends SidecarError {
  readonly request: KubeRequestInfo;
  constructor(request: KubeRequestInfo, server: string, cause: unknown) {
    super("unavailable", `Cannot ${action(request)}: the API server at "${server}" did not answer (${(cause as Error)?.message ?? String(cause)})`, { cause });
    this.name = "KubeUnreachableError";
    this.request = request;
  }
}

/** A 410 (or a watch ERROR event with code 410): the resourceVersion is too old, list again. */
export const isGone = (err: unknown): boolean => err instanceof KubeApiError && (err.status === 410 || err.reason === "Expired" || err.reason === "Gone");

export const isNotFound = (err: unknown): boolean => err instanceof KubeApiError && err.status === 404;
export const isConflict = (err: unknown): boolean => err instanceof KubeApiError && err.status === 409;

/** Builds the error from a response body: a Status object (`{kind: "Status", message, reason, code}`) or anything else. */
export function apiError(request: KubeRequestInfo, status: number, body: string): KubeApiError {
  let reason: string | undefined;
  let message = body.trim().split("\n")[0]!.slice(0, 500);
  try {
    const s = JSON.parse(body) as { kind?: string; message?: unknown; reason?: unknown };
    if (s && s.kind === "Status") {
      if (typeof s.message === "string") message = s.message;
      if (typeof s.reason === "string" && s.reason !== "") reason = s.reason;
    }
  } catch { /* not JSON: keep the text */ }
  return new KubeApiError(request, status, reason, message);
}

function describe(r: KubeRequestInfo, status: number, reason: string | undefined, message: string): string {
  const head = `Cannot ${action(r)}: the API server answered ${status}${reason ? ` ${reason}` : ""}`;
  if (status === 403) {
    const [resource, sub] = r.resource.split("/");
    const dot = resource!.indexOf(".");
    const plural = sub ? `${resource!.slice(0, dot < 0 ? undefined : dot)}/${sub}` : resource!.slice(0, dot < 0 ? undefined : dot);
    const group = dot < 0 ? "" : resource!.slice(dot + 1);
    return `${head}: the operator's identity lacks the RBAC verb "${r.verb}" on "${plural}" in API group "${group}"${
      r.namespace ? ` in namespace "${r.namespace}"` : ""
    } (see deploy/rbac.yaml): ${message}`;
  }
  return `${head}: ${message}`;
}

function action(r: KubeRequestInfo): string {
  const obj = r.name !== undefined ? ` "${r.namespace ? `${r.namespace}/` : ""}${r.name}"` : "";
  const scope = r.name === undefined ? (r.namespace ? ` in namespace "${r.namespace}"` : " in all namespaces") : "";
  return `${r.verb} ${r.resource}${obj}${scope}`;
}

function kindOf(status: number): ErrorKind {
  if (status === 400 || status === 422) return "invalid";
  if (status === 401 || status === 403) return "forbidden";
  if (status === 404) return "not_found";
  if (status === 409 || status === 410) return "gone";
  if (status === 504) return "timeout";
  return "unavailable";
}
