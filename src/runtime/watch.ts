/**
 * File-change notification for the job event log follower (docs/status.md#following-the-event-log).
 * node:fs `watch` works on Bun and on Deno. A notification only says "look again": the follower
 * reads the file itself, and polls as well, since some file systems (NFS, many FUSE mounts) never
 * notify and a watch can fail to start or die quietly.
 */
import { watch } from "node:fs";

/**
 * Calls `onChange` whenever something in folder `dir` changes (a file written, created, renamed
 * or removed). Watching the folder rather than the file also sees a log that is replaced or that
 * does not exist yet. Returns the function that stops watching; a folder that cannot be watched
 * gives a no-op, and the caller's poll does the work alone.
 */
export function watchFolder(dir: string, onChange: () => void): () => void {
  try {
    const w = watch(dir, { persistent: false }, () => onChange());
    w.on("error", () => w.close());
    return () => w.close();
  } catch {
    return () => {};
  }
}
