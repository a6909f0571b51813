/**
 * One error type for the whole sidecar, and one table from its kind to an HTTP status.
 *
 * interLink treats every status but 200 as failure and shows the body to users after
 * HTML-escaping it (docs/interlink.md#how-interlink-treats-responses), so messages are one line of
 * plain text that says what to fix, e.g. `pod "default/web-1": spec.containers[0].name: "Web" is
 * not a DNS label`.
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

/** What a caught value says: an Error's message, anything else as a string. */
export const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

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

/**
 * The one rule for text that must stay on one line: no control character (Unicode category Cc:
 * C0, DEL and C1, so NEL U+0085 too) and no line or paragraph separator (Zl U+2028, Zp U+2029).
 * Unicode counts all of these as line terminators or controls, and a reader that follows
 * Unicode's rules (a browser, `kubectl`'s terminal, a log viewer) breaks the line at them.
 */
export const CONTROL_OR_LINE_BREAK = /[\p{Cc}\p{Zl}\p{Zp}]/u;
const CONTROL_OR_LINE_BREAK_RUNS = /[\p{Cc}\p{Zl}\p{Zp}]+/gu;

export function hasControlOrLineBreak(text: string): boolean {
  return CONTROL_OR_LINE_BREAK.test(text);
}

/** Error bodies are a single line: every character of {@link CONTROL_OR_LINE_BREAK} becomes a space. */
export function oneLine(text: string): string {
  return text.replace(CONTROL_OR_LINE_BREAK_RUNS, " ").trim();
}

/**
 * `text` with every character of {@link CONTROL_OR_LINE_BREAK} written as a `\uXXXX` escape:
 * what a quoted value shows, so that it stays on one line and still says which character it held.
 */
export function escapeControls(text: string): string {
  return text.replace(CONTROL_OR_LINE_BREAK_RUNS, (run) => [...run].map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`).join(""));
}

export function invalid(message: string): SidecarError {
  return new SidecarError("invalid", message);
}
