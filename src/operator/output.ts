/**
 * What a proc leaves in its working directory (docs/operator.md#output): the wrapper sends it back
 * as `work/` in the proc's folder, whole or not at all (job.sh's keep_work), and says which in
 * `podstate/work`. Everything there came from the job, so the operator believes none of it:
 * it walks `work/` itself without following a link, and removes the whole folder when it holds
 * more than the site keeps (HTCJob.MaxOutputBytes, MaxOutputFiles), so that a proc's files are
 * either all kept or none, never a part. Reading one file goes through store/files.ts, which
 * checks the open descriptor, not the path.
 */
import { lstatSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { WORK_OUTPUT } from "../render/submit.ts";
import { readJobFile, UnsafeJobFile } from "../store/files.ts";

/** What became of a proc's working-directory files, kept in its outcome (store.ts). */
export interface ProcFiles {
  kept: boolean;
  /** Bytes and entries (files and folders) found, by the operator when kept, else as reported. */
  bytes: number;
  entries: number;
  /** Why they were not kept, one line. */
  reason?: string;
}

export interface OutputLimits {
  maxBytes: number;
  maxFiles: number;
}

/** The wrapper's one-line report (`kept|too-big|missing <bytes> <entries> <dropped>`). */
const MARKER = "podstate/work";

function readMarker(procDir: string): { what: string; bytes: number; entries: number } | undefined {
  try {
    const line = new TextDecoder().decode(readJobFile({ dir: procDir, rel: MARKER }, 0, 256)).trim();
    const m = /^(kept|too-big|missing) (\d{1,15}) (\d{1,15}) (\d{1,15})$/.exec(line);
    return m ? { what: m[1]!, bytes: Number(m[2]), entries: Number(m[3]) } : undefined;
  } catch (err) {
    if (err instanceof UnsafeJobFile) return undefined;
    throw err;
  }
}

/** One entry of a proc's `work/`, as found (links are never followed). */
export interface WorkEntry {
  /** Relative to `work/`, `/`-separated. */
  path: string;
  kind: "file" | "dir" | "symlink" | "other";
  size: number;
}

/**
 * Walks `dir` without following anything: `lstat` of each entry, folders entered only when
 * they are folders themselves. Stops once `stopAfter` entries were seen.
 */
export function walkWork(dir: string, stopAfter = Number.MAX_SAFE_INTEGER): { entries: WorkEntry[]; complete: boolean } | undefined {
  try {
    if (!lstatSync(dir).isDirectory()) return undefined;
  } catch {
    return undefined;
  }
  const entries: WorkEntry[] = [];
  const stack = [""];
  while (stack.length > 0) {
    const rel = stack.pop()!;
    let names: string[];
    try {
      names = readdirSync(join(dir, rel)).sort();
    } catch {
      continue;
    }
    for (const name of names) {
      if (entries.length >= stopAfter) return { entries, complete: false };
      const path = rel === "" ? name : `${rel}/${name}`;
      let st;
      try {
        st = lstatSync(join(dir, path));
      } catch {
        continue;
      }
      const kind = st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "dir" : st.isFile() ? "file" : "other";
      entries.push({ path, kind, size: kind === "file" ? st.size : 0 });
      if (kind === "dir") stack.push(path);
    }
  }
  return { entries: entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)), complete: true };
}

const size = (n: number) => (n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : `${n} bytes`);

/**
 * Settles a proc's working-directory files once its output is back (its outcome is final): kept
 * when `work/` is within the limits, else `work/` is removed and the reason recorded.
 */
export function settleWork(procDir: string, limits: OutputLimits): ProcFiles {
  const dir = join(procDir, WORK_OUTPUT);
  const marker = readMarker(procDir);
  const over = (bytes: number, entries: number) =>
    `${size(bytes)} in ${entries} entries is more than this site keeps (HTCJob.MaxOutputBytes ${limits.maxBytes}, MaxOutputFiles ${limits.maxFiles})`;
  if (marker?.what === "too-big") {
    rmSync(dir, { recursive: true, force: true });
    return { kept: false, bytes: marker.bytes, entries: marker.entries, reason: `the working directory's ${over(marker.bytes, marker.entries)}` };
  }
  // The limit on entries bounds the walk too: a job cannot make the operator list a million names.
  const found = walkWork(dir, limits.maxFiles + 1);
  if (!found) {
    return { kept: false, bytes: 0, entries: 0, reason: "the working directory did not come back (the wrapper did not end normally)" };
  }
  const bytes = found.entries.reduce((n, e) => n + e.size, 0);
  const entries = found.entries.length;
  if (!found.complete || bytes > limits.maxBytes || entries > limits.maxFiles) {
    rmSync(dir, { recursive: true, force: true });
    return { kept: false, bytes, entries, reason: `what came back as the working directory: ${found.complete ? "" : "more than "}${over(bytes, entries)}` };
  }
  return { kept: true, bytes, entries };
}
