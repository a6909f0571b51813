/**
 * `htcondor-sidecar htcjob logs NAMESPACE/NAME [--proc N] [--files | --file PATH]`
 * (docs/operator.md#logs): what a proc's script wrote, and the files it left in its working
 * directory, from the HTCJob's folder under the data folder, found through the operator's store
 * by name (the newest HTCJob of that name, so a deleted one's output is still found). The files
 * came back from the job, so they are read as job files: no symlink, nothing outside the proc's
 * folder, checked on the open file at the moment it is read.
 */
import { join } from "node:path";
import { WORK_OUTPUT } from "../render/submit.ts";
import { jobFileSize, readJobFile, UnsafeJobFile } from "../store/files.ts";
import { walkWork } from "./output.ts";
import { HTCJOB_CONTAINER } from "./htcjob-plan.ts";
import type { HTCJobStore } from "./store.ts";

/** The container's log: stdout and stderr of the script, each line stamped by the wrapper. */
const LOG = `c.${HTCJOB_CONTAINER}.log`;
/** The most a one-off read prints: the end of a larger log. */
const MAX_BYTES = 16 * 1024 * 1024;

export interface LogsRequest {
  store: HTCJobStore;
  namespace: string;
  name: string;
  proc: number;
  timestamps: boolean;
  /** List the working directory's files instead of printing the log. */
  files?: boolean;
  /** Print this file of the working directory (relative to it) instead of the log. */
  file?: string;
}

export function htcjobLogs(r: LogsRequest): { text: string } | { error: string } {
  const rec = r.store.byName(r.namespace, r.name);
  const who = `HTCJob "${r.namespace}/${r.name}"`;
  if (!rec) return { error: `Cannot read the logs of ${who}: this operator's store has no HTCJob of that name` };
  if (rec.phase === "refused") return { error: `Cannot read the logs of ${who}: it was refused, nothing ran (${rec.refusal ?? "see its status"})` };
  if (r.proc >= rec.procs) return { error: `Cannot read the logs of ${who}: it has ${rec.procs} proc(s), ProcId 0 to ${rec.procs - 1}, not ${r.proc}` };
  const dir = join(rec.dir, "procs", String(r.proc));
  if (r.files || r.file !== undefined) {
    const outcome = rec.outcomes[r.proc];
    const where = `${who} proc ${r.proc}`;
    if (!outcome) return { error: `Cannot read the files of ${where}: it has not ended yet (its files come back when it does)` };
    if (outcome.files?.kept === false) return { error: `Cannot read the files of ${where}: they were not kept: ${outcome.files.reason}` };
    if (!outcome.files) return { error: `Cannot read the files of ${where}: none came back (it did not exit, or the site keeps none)` };
    return r.file !== undefined ? workFile(dir, r.file, where) : listWork(dir, where);
  }
  const file = { dir, rel: LOG };
  let bytes: Uint8Array;
  try {
    const size = jobFileSize(file);
    if (size === undefined) {
      const state = rec.outcomes[r.proc] ? "ended, but its log did not come back" : "has not ended yet (its log comes back when it does)";
      return { error: `Cannot read the logs of ${who} proc ${r.proc}: it ${state}; the folder is ${dir}` };
    }
    bytes = readJobFile(file, Math.max(0, size - MAX_BYTES), MAX_BYTES);
  } catch (err) {
    if (err instanceof UnsafeJobFile) return { error: `Cannot read the logs of ${who} proc ${r.proc}: ${err.message}` };
    throw err;
  }
  let text = new TextDecoder().decode(bytes);
  if (!r.timestamps) text = text.split("\n").map((l) => l.replace(/^\S+ /, "")).join("\n");
  return { text: text.endsWith("\n") ? text.slice(0, -1) : text };
}

/** The working directory's entries, one a line: size and path; a link is shown, never followed. */
function listWork(dir: string, where: string): { text: string } | { error: string } {
  const found = walkWork(join(dir, WORK_OUTPUT));
  if (!found) return { error: `Cannot list the files of ${where}: ${join(dir, WORK_OUTPUT)} is not a folder` };
  const lines = found.entries.map((e) =>
    e.kind === "file"
      ? `${String(e.size).padStart(12)} ${e.path}`
      : `${e.kind.padStart(12)} ${e.path}${e.kind === "dir" ? "/" : e.kind === "symlink" ? " (not followed)" : ""}`
  );
  return { text: lines.length === 0 ? `(the working directory of ${where} was empty; folder ${join(dir, WORK_OUTPUT)})` : lines.join("\n") };
}

function workFile(dir: string, path: string, where: string): { text: string } | { error: string } {
  const rel = `${WORK_OUTPUT}/${path.replace(/^\.\/+/, "")}`;
  try {
    const size = jobFileSize({ dir, rel });
    if (size === undefined) return { error: `Cannot read ${JSON.stringify(path)} of ${where}: no such file in its working directory` };
    if (size > MAX_BYTES) {
      return { error: `Cannot print ${JSON.stringify(path)} of ${where}: ${size} bytes is more than ${MAX_BYTES}; it is ${join(dir, rel)}` };
    }
    // Printed as a line: its last line break is the one the printing adds.
    const text = new TextDecoder().decode(readJobFile({ dir, rel }, 0, MAX_BYTES));
    return { text: text.endsWith("\n") ? text.slice(0, -1) : text };
  } catch (err) {
    if (err instanceof UnsafeJobFile) return { error: `Cannot read ${JSON.stringify(path)} of ${where}: ${err.message}` };
    throw err;
  }
}
