/**
 * How long a deleted HTCJob's output stays (docs/operator.md#retention). While the object exists
 * its output stays: the object is the user's handle on it. Once the object is gone (its record
 * `deleted`), `htcjob logs` still finds the output for HTCJob.OutputRetentionSeconds; then the
 * folder `htcjobs/<uid>/` and the record go together, the folder first, so that a failed removal
 * is tried again at the next pass rather than leaving a folder no record names.
 */
import { rmSync } from "node:fs";
import { resolve } from "node:path";
import type { Logger } from "../logger.ts";
import { htcjobDir } from "./controller.ts";
import type { HTCJobStore } from "./store.ts";

export interface RetentionDeps {
  store: HTCJobStore;
  dataRoot: string;
  retentionMs: number;
  now: () => number;
  log: Logger;
}

/** Removes the output and the record of every HTCJob deleted longer ago than the retention. Returns the UIDs removed. */
export function reapDeleted(d: RetentionDeps): string[] {
  const removed: string[] = [];
  const now = d.now();
  for (const r of d.store.list(["deleted"])) {
    if ((r.deletedAt ?? r.updatedAt) + d.retentionMs > now || !/^[A-Za-z0-9-]{1,64}$/.test(r.uid)) continue;
    // The folder is named by the UID under this data folder, whatever the record says: a record
    // never makes the operator remove a folder elsewhere.
    const dir = htcjobDir(d.dataRoot, r.uid);
    if (resolve(r.dir) !== resolve(dir)) {
      d.log.warn("a deleted HTCJob's record names another folder; removing only its own", { uid: r.uid, recorded: r.dir, dir });
    }
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch (err) {
      d.log.warn("cannot remove a deleted HTCJob's output; trying again later", { uid: r.uid, dir, error: (err as Error).message });
      continue;
    }
    d.store.forget(r.uid);
    removed.push(r.uid);
  }
  if (removed.length > 0) d.log.info("removed the output of deleted HTCJobs past their retention", { count: removed.length });
  return removed;
}
