/**
 * The shared job event logs on disk: `events/<name>` under DataRootFolder
 * (docs/status.md#following-the-event-log). The schedd and the shadows append to them; the
 * sidecar only reads, and deletes a file none of whose jobs is still queued.
 *
 * A job of a single-user pool runs as the log's owner and may replace the file with a symlink or
 * a folder: the file is opened without following a symlink and read only when it is a plain file.
 */
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readSync, rmSync } from "node:fs";
import { join } from "node:path";

export const EVENTS_DIR = "events";

export function eventsDir(dataRoot: string): string {
  return join(dataRoot, EVENTS_DIR);
}

export function ensureEventsDir(dataRoot: string): string {
  const dir = eventsDir(dataRoot);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** The file's inode and size, or undefined when there is no plain file at the path (yet). */
export function statEventLog(path: string): { inode: number; size: number } | undefined {
  try {
    const st = lstatSync(path);
    return st.isFile() ? { inode: st.ino, size: st.size } : undefined;
  } catch {
    return undefined;
  }
}

export interface LogRead {
  inode: number;
  size: number;
  /** The bytes from `offset` on, at most `max`. */
  bytes: Uint8Array;
  /** Up to five bytes before `offset` (eventlog.ts boundaryIntact checks they end a `...` line). */
  before: Uint8Array;
}

/**
 * Reads at most `max` bytes from `offset`, with the few bytes before it, from one open
 * descriptor: inode, size and bytes belong to the same file. Undefined when the path holds no
 * plain file.
 */
export function readEventLogBytes(path: string, offset: number, max: number): LogRead | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return undefined;
    const from = Math.max(0, offset - 5);
    const want = Math.max(0, Math.min(max, st.size - offset)) + (offset - from);
    const buf = new Uint8Array(want);
    let got = 0;
    while (got < want) {
      const n = readSync(fd, buf, got, want - got, from + got);
      if (n <= 0) break;
      got += n;
    }
    const pre = offset - from;
    return { inode: st.ino, size: st.size, before: buf.subarray(0, Math.min(pre, got)), bytes: buf.subarray(Math.min(pre, got), got) };
  } finally {
    closeSync(fd);
  }
}

/** Removes a log none of whose jobs is queued any more (a missing file is fine). */
export function removeEventLogFile(path: string): void {
  rmSync(path, { force: true });
}
