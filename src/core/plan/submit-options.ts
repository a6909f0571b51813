import { hasControlOrLineBreak } from "../errors.ts";
import { quote as quoteSpec } from "../pod.ts";
// The rules for submit command names and values (submit-rules.ts); the annotation must accept
// exactly what the renderer can write.
import { submitKey, submitValueProblem } from "../submit-rules.ts";

/**
 * `htcondor-job.vk.io/submit-options`: one `command = value` per line (newlines only: `;` may be
 * part of a value); blank lines and lines starting with `#` are skipped. A command must be one the
 * submit renderer can write (its {@link submitKey}: `+X` and `MY.X` are one command) and on the
 * site's allowlist, compared in that canonical form, case-insensitively; values are rendered (and
 * quoted) by render/submit.
 */
export function parseSubmitOptions(text: string, allow: readonly string[]): { lines: [string, string][] } | { error: string } {
  const canonical = (k: string) => {
    const r = submitKey(k);
    return "key" in r ? r.key.toLowerCase() : undefined;
  };
  const allowed = new Set(allow.map(canonical).filter((k) => k !== undefined));
  const lines: [string, string][] = [];
  const rows = text.split(/\r?\n/);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!.trim();
    if (!row || row.startsWith("#")) continue;
    const m = /^([^=\s]+)\s*=\s*(.*)$/.exec(row);
    if (!m) return { error: `line ${i + 1}: expected "command = value", got ${quoteSpec(row)}` };
    const [, command = "", value = ""] = m;
    const key = submitKey(command);
    if ("problem" in key && !key.reserved) return { error: `line ${i + 1}: submit command ${quoteSpec(command)}: ${key.problem}` };
    // A reserved command is never on the allowlist (config refuses it there), so it reads as any
    // other command the site did not allow.
    if (!("key" in key && allowed.has(key.key.toLowerCase()))) {
      return { error: `submit command ${quoteSpec(command)} is not allowed on this site${allow.length ? ` (allowed: ${allow.join(", ")})` : ""}` };
    }
    if (hasControlOrLineBreak(value)) return { error: `line ${i + 1}: the value of ${quoteSpec(command)} must not contain control characters or line breaks` };
    const vp = submitValueProblem(value);
    if (vp) return { error: `line ${i + 1}: the value of ${quoteSpec(command)} ${vp}` };
    lines.push([command, value]);
  }
  return { lines };
}
