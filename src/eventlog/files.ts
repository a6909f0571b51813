/**
 * The shared job event logs on disk: `events/<name>` under DataRootFolder
 * (docs/status.md#following-the-event-log). The schedd and the shadows append to them; the
 * sidecar only reads, and deletes a file none of whose jobs is still queued.
 *
 * A job of a single-user pool runs as the log's owner and may replace the file with a symlink or
 * a folder: the file is opened without following a symlink and read only when it is a plain file.
 */
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { errorText } from "../core/errors.ts";

export const EVENTS_DIR = "events";

export function eventsDir(dataRoot: string): string {
  return join(dataRoot, EVENTS_DIR);
}

/**
 * Creates the folder if it is missing and checks it (`checkEventsDir`); throws when it is not
 * one the sidecar can trust.
 */
export function ensureEventsDir(dataRoot: string): string {
  const dir = eventsDir(dataRoot);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const bad = checkEventsDir(dataRoot);
  if (bad) throw new Error(bad);
  return dir;
}

/**
 * Why the events folder cannot be used, or undefined when it can: it must be a real folder (not
 * a symlink, which would make a read or a delete act on another folder), owned by the owner of
 * DataRootFolder, and open to that owner alone (0700). Checked at start and on each pass, as a
 * job of a single-user pool runs as that owner and may swap it.
 */
export function checkEventsDir(dataRoot: string): string | undefined {
  const dir = eventsDir(dataRoot);
  try {
    const st = lstatSync(dir);
    if (!st.isDirectory()) return `Event log folder "${dir}" is not a folder (a symlink or a file)`;
    const owner = lstatSync(dataRoot).uid;
    if (st.uid !== owner) return `Event log folder "${dir}" is owned by uid ${st.uid}, not by the owner of the data folder (uid ${owner})`;
    if ((st.mode & 0o777) !== 0o700) return `Event log folder "${dir}" has mode ${(st.mode & 0o777).toString(8)}, not 700`;
    return undefined;
  } catch (err) {
    return `Cannot check the event log folder "${dir}": ${errorText(err)}`;
  }
}

/** The `events-*.log` files in the folder with their last write (ms), for the sweep of files no record names. */
export function listEventLogFiles(dir: string): { name: string; mtimeMs: number }[] {
  const out: { name: string; mtimeMs: number }[] = [];
  for (const name of readdirSync(dir)) {
    if (!/^events-[0-9TZ-]+\.log$/.test(name)) continue;
    try {
      const st = lstatSync(join(dir, name));
      if (st.isFile()) out.push({ name, mtimeMs: st.mtimeMs });
    } catch { /* gone meanwhile */ }
  }
  return out;
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
  /** Up to five bytes before `offset` (parse.ts boundaryIntact checks they end a `...` line). */
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

/**
 * Removes a log none of whose jobs is queued any more (a missing file is fine). Unlinks the name
 * only: never a folder, never what a symlink points to.
 */
export function removeEventLogFile(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as { code?: string }).code !== "ENOENT") throw err;
  }
}
