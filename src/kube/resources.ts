/**
 * The resources the operator touches and the URL paths of the Kubernetes API (pure). A path
 * segment comes from the API server or the operator's own configuration, yet it is still checked:
 * "." or ".." would address another object.
 */
import { SidecarError } from "../core/errors.ts";

export interface ResourceRef {
  /** "" for the core group (paths under /api/v1). */
  group: string;
  version: string;
  /** The lower-case plural of the URL, e.g. "htcjobs". */
  plural: string;
  kind: string;
  namespaced: boolean;
}

export const HTCJOBS: ResourceRef = { group: "htc.cern.ch", version: "v1alpha1", plural: "htcjobs", kind: "HTCJob", namespaced: true };
/** Core v1 Events: what `kubectl describe` in 1.20 lists (docs/operator.md#events). */
export const EVENTS: ResourceRef = { group: "", version: "v1", plural: "events", kind: "Event", namespaced: true };
export const LEASES: ResourceRef = { group: "coordination.k8s.io", version: "v1", plural: "leases", kind: "Lease", namespaced: true };
export const CONFIGMAPS: ResourceRef = { group: "", version: "v1", plural: "configmaps", kind: "ConfigMap", namespaced: true };
export const NAMESPACES: ResourceRef = { group: "", version: "v1", plural: "namespaces", kind: "Namespace", namespaced: false };

/** The RBAC verbs, as a 403 names them. */
export type Verb = "get" | "list" | "watch" | "create" | "update" | "patch" | "delete";

export interface Target {
  namespace?: string;
  name?: string;
  subresource?: "status";
}

/** `apiVersion` as written in an object: "v1" or "group/version". */
export const apiVersionOf = (ref: ResourceRef): string => ref.group ? `${ref.group}/${ref.version}` : ref.version;

/** `htcjobs.htc.cern.ch`, `htcjobs.htc.cern.ch/status`, `configmaps`: how RBAC and kubectl name a resource. */
export function resourceName(ref: ResourceRef, subresource?: string): string {
  return `${ref.plural}${ref.group ? `.${ref.group}` : ""}${subresource ? `/${subresource}` : ""}`;
}

export function resourcePath(ref: ResourceRef, t: Target = {}): string {
  let p = ref.group ? `/apis/${ref.group}/${ref.version}` : `/api/${ref.version}`;
  if (t.namespace !== undefined) {
    if (!ref.namespaced) throw new SidecarError("internal", `Cannot address ${resourceName(ref)} in namespace "${t.namespace}": it is cluster-scoped`);
    p += `/namespaces/${segment(t.namespace, "namespace")}`;
  }
  p += `/${ref.plural}`;
  if (t.name !== undefined) p += `/${segment(t.name, "name")}`;
  if (t.subresource !== undefined) p += `/${t.subresource}`;
  return p;
}

function segment(value: string, what: string): string {
  if (value === "" || value === "." || value === "..") throw new SidecarError("invalid", `Cannot use ${what} "${value}" in an API path`);
  return encodeURIComponent(value);
}
