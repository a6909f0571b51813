/**
 * Which probe and hook header values the wrapper can send (docs/pod-to-job.md#probes-and-hooks).
 *
 * HTTP forbids NUL, CR and LF in a field value, and the other C0 controls but HTAB, and DEL
 * (RFC 9110 §5.5: a value is visible characters, SP, HTAB and obs-text). Everything else is
 * sent as its UTF-8 bytes: NEL (U+0085), U+2028 and U+2029 are not HTTP line breaks, and
 * Kubernetes' Go client sends them as they are. This is not the one-line rule of error reasons
 * (core/errors.ts), which a reader breaks at those characters.
 */

/** The characters a header value must not hold. */
// deno-lint-ignore no-control-regex -- control characters are what this rule is about
const NOT_IN_HEADER_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why `value` cannot be sent as an HTTP header value, or undefined when it can. */
export function headerValueProblem(value: string): string | undefined {
  const bad = NOT_IN_HEADER_VALUE.exec(value);
  if (bad) return `must not contain ${codePoint(bad[0])} (HTTP allows no control character in a header value but HTAB)`;
  // A lone surrogate has no UTF-8 form: its bytes would not be the value given.
  if (LONE_SURROGATE.test(value)) return "is not valid Unicode (it holds a lone surrogate)";
  return undefined;
}

const codePoint = (ch: string) => `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
