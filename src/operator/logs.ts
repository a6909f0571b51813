/**
 * `htcondor-sidecar htcjob logs NAMESPACE/NAME [--proc N]` (docs/operator.md#logs): what a proc's
 * script wrote, from the HTCJob's folder under the data folder, found through the operator's
 * store by name (the newest HTCJob of that name, so a deleted one's output is still found). The
 * files came back from the job, so they are read as job files: no symlink, nothing outside the
 * proc's folder.
 */
import { join } from "node:path";
import { jobFileSize, readJobFile, UnsafeJobFile } from "../store/files.ts";
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
}

export function htcjobLogs(r: LogsRequest): { text: string } | { error: string } {
  const rec = r.store.byName(r.namespace, r.name);
  const who = `HTCJob "${r.namespace}/${r.name}"`;
  if (!rec) return { error: `Cannot read the logs of ${who}: this operator's store has no HTCJob of that name` };
  if (rec.phase === "refused") return { error: `Cannot read the logs of ${who}: it was refused, nothing ran (${rec.refusal ?? "see its status"})` };
  if (r.proc >= rec.procs) return { error: `Cannot read the logs of ${who}: it has ${rec.procs} proc(s), ProcId 0 to ${rec.procs - 1}, not ${r.proc}` };
  const dir = join(rec.dir, "procs", String(r.proc));
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
