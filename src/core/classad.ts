/** A ClassAd string literal: `"…"` with `\\` and `"` escaped (for -constraint expressions and, through the submit renderer, submit values). */
export function classAdString(s: string): string {
  return `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}
