/**
 * The rules for what may be written into a submit description: command names and values. The
 * submit renderer (render/submit.ts) applies them; the planner (the submit-options annotation)
 * and the config (ExtraLines) check with them first, so that a bad line is refused where it
 * came from (docs/htcondor.md#submit-file-rules).
 */

/** A submit command name (condor_submit's own commands and macros). */
const COMMAND = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A ClassAd attribute name: what follows `MY.` (or `+`) in a job-attribute line. */
const ATTRIBUTE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Commands that define the job's contract with the wrapper and the sidecar; an extra line must
 * not replace them (`DOLLAR` would change how every escaped `$` expands).
 */
const RESERVED = new Set(
  [
    "queue",
    "include",
    "dollar",
    "universe",
    "executable",
    "transfer_executable",
    "arguments",
    "args",
    "environment",
    "env",
    "getenv",
    "output",
    "error",
    "log",
    "input",
    "transfer_output_files",
    "transfer_input_files",
    "should_transfer_files",
    "when_to_transfer_output",
    "want_io_proxy",
    "initialdir",
    "iwd",
  ],
);

/**
 * Job attributes those commands set: `MY.Environment = "…"` would replace `environment` just as
 * well, so the same contract forbids them as `MY.X` / `+X`. InterLink* (the pod's identity, its
 * container states) is ours too, and the schedd's own bookkeeping is not the pod's to write.
 */
const RESERVED_ATTRIBUTES = new Set(
  [
    "cmd",
    "arguments",
    "args",
    "environment",
    "env",
    "in",
    "out",
    "err",
    "userlog",
    "iwd",
    "jobuniverse",
    "transferexecutable",
    "transferin",
    "transferinput",
    "transferoutput",
    "shouldtransferfiles",
    "whentotransferoutput",
    "wantioproxy",
    "owner",
    "user",
    "clusterid",
    "procid",
    "jobstatus",
  ],
);

/**
 * The one rule for a submit command name, used by the renderer, the submit-options annotation
 * and the config's ExtraLines: the canonical key, or why it cannot be written.
 *
 * `+X` and `MY.X` are the same thing to condor_submit (docs/htcondor.md#submit-file-rules); both
 * are written `MY.X`, so that the reserved-name checks see one spelling and a pod cannot reach
 * `MY.InterLinkPodUID` by writing `+InterLinkPodUID`.
 */
export function submitKey(key: string): { key: string } | { problem: string; reserved: boolean } {
  const attr = key.startsWith("+") ? key.slice(1) : /^my\./i.test(key) ? key.slice(3) : undefined;
  if (attr !== undefined) {
    if (!ATTRIBUTE.test(attr)) return { problem: "not a job attribute name (+Name or MY.Name: letters, digits and '_')", reserved: false };
    const lower = attr.toLowerCase();
    // HTCJob…: an HTCJob's identity and its operator's (src/operator/htcjob-plan.ts).
    if (lower.startsWith("interlink") || lower.startsWith("htcjob") || RESERVED_ATTRIBUTES.has(lower)) {
      return { problem: "it is set by the sidecar", reserved: true };
    }
    return { key: `MY.${attr}` };
  }
  if (!COMMAND.test(key)) return { problem: "not a submit command name (letters, digits and '_'; +Name or MY.Name for job attributes)", reserved: false };
  // InterLink… commands are the sidecar's macros (a batch's per-job values, render/submit.ts).
  if (RESERVED.has(key.toLowerCase()) || key.toLowerCase().startsWith("interlink")) return { problem: "it is set by the sidecar", reserved: true };
  return { key };
}

/**
 * The one rule for a submit value: why it cannot be written, or undefined. condor_submit reads
 * the file line by line: a line ends at `\n` (a NUL ends what it reads of one), the whitespace
 * C's isspace() sees at its end (space, \t, \v, \f, \r) is trimmed, and a line that then ends
 * in `\` continues onto the next one, which becomes part of the value (observed on HTCondor 25:
 * `rank = 1 \` took in the next line; docs/htcondor.md#submitting-many-pods-at-once). A value that
 * could do any of that would change another line of the file. Any Unicode space after the backslash
 * counts, so that no locale's idea of a space matters.
 */
export function submitValueProblem(value: string): string | undefined {
  if (/[\r\n\0]/.test(value)) return "must not contain a line break or NUL";
  if (/\\\s*$/.test(value)) return "must not end in '\\', which would continue it onto the next line of the submit file";
  return undefined;
}
