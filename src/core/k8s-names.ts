/**
 * Kubernetes' rules for names, keys and paths (k8s.io/apimachinery/pkg/util/validation,
 * pkg/apis/core/validation), the one copy of each: the create request's validation (pod.ts), the
 * planner and the configuration all apply these.
 */
import type { Quote } from "./pod-reason.ts";

/** RFC 1123 label, the one copy of it: a subdomain is such labels joined by dots. */
const LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS_LABEL = new RegExp(`^${LABEL}$`);
const DNS_SUBDOMAIN = new RegExp(`^${LABEL}(\\.${LABEL})*$`);
const CONFIG_MAP_KEY = /^[-._a-zA-Z0-9]+$/;
const UID = /^[A-Za-z0-9-]{1,128}$/;

/** Kubernetes' rule for `metadata.uid` (the create path applies it through checkIdentity; delete alone). */
export function isPodUid(uid: string): boolean {
  return UID.test(uid);
}
/**
 * A name a shell (and Apptainer's APPTAINERENV_<NAME>) can carry. Other valid env names reach a
 * container through `env NAME=value` inside it (render/wrapper-lib.bash, load_env).
 */
export const SHELL_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Kubernetes' env var name rule since 1.34 (KEP-4369, RelaxedEnvironmentVariableValidation GA):
 * any printable ASCII character but `=`, not empty. Before, `[-._a-zA-Z][-._a-zA-Z0-9]*`, which
 * this includes. Undefined when valid.
 */
export function envNameProblem(name: string, q: Quote): string | undefined {
  if (name === "") return "must not be empty";
  if (name.includes("=")) return `${q(name)} must not contain '='`;
  if (!/^[\x20-\x7e]+$/.test(name)) return `${q(name)} must consist of printable ASCII characters`;
  return undefined;
}

export function isDnsLabel(s: string): boolean {
  return s.length <= 63 && DNS_LABEL.test(s);
}
export function isDnsSubdomain(s: string): boolean {
  return s.length <= 253 && DNS_SUBDOMAIN.test(s);
}

/** Kubernetes' IsConfigMapKey: `[-._a-zA-Z0-9]+`, ≤ 253, not `.`, `..`, nor starting with `..`. */
export function configMapKeyProblem(key: string, q: Quote): string | undefined {
  if (key.length === 0) return "must not be empty";
  if (key.length > 253) return "must be no more than 253 characters";
  if (!CONFIG_MAP_KEY.test(key)) return `${q(key)} must consist of letters, digits, '-', '_' or '.'`;
  if (key === "." || key === "..") return `must not be ${q(key)}`;
  if (key.startsWith("..")) return `${q(key)} must not start with '..'`;
  return undefined;
}

/**
 * Kubernetes' validateLocalDescendingPath (+ validateLocalNonReservedPath when `reserved`):
 * relative, no `..` element, and for volume file paths not starting with `..` (the atomic writer's
 * `..data`).
 */
export function relativePathProblem(p: string, reserved: boolean, q: Quote): string | undefined {
  if (p.includes("\0")) return "must not contain NUL";
  if (p.startsWith("/")) return `${q(p)} must be a relative path`;
  if (p.split("/").includes("..")) return `${q(p)} must not contain '..'`;
  if (reserved && p.startsWith("..")) return `${q(p)} must not start with '..'`;
  return undefined;
}
