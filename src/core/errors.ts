/**
 * One error type for the whole sidecar, and one table from its kind to an HTTP status.
 *
 * interLink treats every status but 200 as failure and shows the body to users after
 * HTML-escaping it (spec: interlink §2), so messages are one line of plain text that says what
 * to fix, e.g. `pod "default/web-1": spec.containers[0].name: "Web" is not a DNS label`.
 */
export type ErrorKind =
  /** The request is wrong: bad JSON, a field that breaks Kubernetes' rules, a refused channel. */
  | "invalid"
  /** The request body exceeds the configured limit. */
  | "too_large"
  /** The pod or container is not known. */
  | "not_found"
  /** The pod was deleted; a late create must not resurrect it. */
  | "gone"
  /** Understood but refused: e.g. a log the job replaced with a symlink, which the sidecar does not follow. */
  | "forbidden"
  /** HTCondor (or the store) cannot be reached or refused the work. */
  | "unavailable"
  /** A tool did not answer in time. */
  | "timeout"
  | "internal";

export class SidecarError extends Error {
  readonly kind: ErrorKind;
  constructor(kind: ErrorKind, message: string, options?: { cause?: unknown }) {
    super(oneLine(message), options);
    this.kind = kind;
    this.name = "SidecarError";
  }
}

export const httpStatusOf: Readonly<Record<ErrorKind, number>> = {
  invalid: 400,
  too_large: 413,
  not_found: 404,
  gone: 409,
  forbidden: 403,
  unavailable: 503,
  timeout: 504,
  internal: 500,
};

/** Error bodies are a single line: newlines and control characters become spaces. */
export function oneLine(text: string): string {
  // deno-lint-ignore no-control-regex
  return text.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
}

export function invalid(message: string): SidecarError {
  return new SidecarError("invalid", message);
}
