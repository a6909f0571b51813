/**
 * The pod folders under DataRootFolder: `pods/<uid>/` holds the wrapper, the submit file, the
 * env files and volume data that ship with the job, and the output that comes back.
 * Folders are 0700; secret files 0600 and removed first.
 */
import {
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  realpathSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join, resolve, sep } from "node:path";
import type { PodFile } from "../core/types.ts";
import { parseStateLine, type StateLine } from "../core/state-line.ts";
import { errorText } from "../core/errors.ts";

export function podDir(dataRoot: string, uid: string): string {
  return join(dataRoot, "pods", uid);
}

/** The pod UIDs that have a folder under DataRootFolder. */
export function listPodDirs(dataRoot: string): string[] {
  try {
    return readdirSync(join(dataRoot, "pods"), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch {
    return [];
  }
}

export function ensureDir(path: string): void {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  chmodSync(path, 0o700);
}

/** Writes every file with its mode; refuses any path that would leave the folder. */
export function writePodFiles(dir: string, files: readonly PodFile[]): void {
  ensureDir(dir);
  const root = resolve(dir) + sep;
  for (const f of files) {
    const target = resolve(dir, f.path);
    if (!target.startsWith(root)) throw new Error(`Refusing to write ${JSON.stringify(f.path)} outside the pod folder`);
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
    writeFileSync(target, f.content, { mode: f.mode });
    chmodSync(target, f.mode);
  }
}

/**
 * A submit description for several pods (service/submitter.ts): `batches/batch-<n>.sub` under
 * DataRootFolder, 0600, removed by the caller after its condor_submit. Named by the caller's
 * counter (`next`), never after a pod: the name reaches condor_submit's command line, where a pod
 * UID such as `-rf` would read as an option (docs/htcondor.md#condor_submit-options). Created
 * exclusively, the next number when taken: a file an earlier run left may still be read by its
 * orphaned condor_submit. Returns its path.
 */
export function writeBatchFile(dataRoot: string, next: () => number, text: string): string {
  const dir = join(dataRoot, "batches");
  ensureDir(dir);
  for (;;) {
    const path = join(dir, `batch-${next()}.sub`);
    try {
      writeFileSync(path, text, { mode: 0o600, flag: "wx" });
      return path;
    } catch (err) {
      if ((err as { code?: string }).code !== "EEXIST") throw err;
    }
  }
}

/** Removes the secret files first (so a failure half-way never leaves secrets behind), then the folder. */
export function removePodDir(dir: string, secrets: readonly string[] = []): void {
  for (const p of secrets) rmSync(join(dir, p), { force: true });
  rmSync(dir, { recursive: true, force: true });
}

export function removeFiles(dir: string, paths: readonly string[]): void {
  for (const p of paths) rmSync(join(dir, p), { force: true });
}

/**
 * A file in a pod folder that the job wrote or could have replaced: container logs, state files,
 * transferred output. `rel` is relative to the pod folder `dir`.
 */
export interface JobFile {
  dir: string;
  rel: string;
}

/** A job file that is not a plain file of the pod folder: a symlink, FIFO, device, hard link or a path leading out. */
export class UnsafeJobFile extends Error {
  override name = "UnsafeJobFile";
}

/**
 * Opens a job file for reading, or undefined when it does not exist. The job can leave anything
 * in its pod folder (with a shared filesystem it writes there directly), so the last component
 * is opened without following a symlink (and without blocking on a FIFO), and then the open
 * descriptor is checked, not the path: a regular file with a single link, whose real path lies
 * under the pod folder (a symlinked folder on the way would lead out). A path checked before the
 * open would be a race.
 */
function openJobFile(f: JobFile): number | undefined {
  if (f.rel.startsWith("/") || f.rel.split("/").includes("..")) throw new UnsafeJobFile(`${f.rel}: not a path inside the pod folder`);
  let fd: number;
  try {
    fd = openSync(join(f.dir, f.rel), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    if (code === "ELOOP") throw new UnsafeJobFile(`${f.rel} is a symbolic link`);
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new UnsafeJobFile(`${f.rel} is not a regular file`);
    if (st.nlink !== 1) throw new UnsafeJobFile(`${f.rel} has ${st.nlink} hard links`);
    // The pod folder's parent (pods/) is the sidecar's own; the folder itself must not be a link.
    const root = join(realpathSync(dirname(f.dir)), basename(f.dir));
    const real = readlinkSync(`/proc/self/fd/${fd}`);
    if (!real.startsWith(root + sep)) throw new UnsafeJobFile(`${f.rel} resolves outside the pod folder`);
    return fd;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/** Runs `use` on an open, checked job file; undefined when the file does not exist. */
function withJobFile<T>(f: JobFile, use: (fd: number, size: number) => T): T | undefined {
  const fd = openJobFile(f);
  if (fd === undefined) return undefined;
  try {
    return use(fd, fstatSync(fd).size);
  } finally {
    closeSync(fd);
  }
}

export function jobFileSize(f: JobFile): number | undefined {
  return withJobFile(f, (_fd, size) => size);
}

/** Reads bytes [from, from+max) of a job file (log follow reads what was appended). */
export function readJobFile(f: JobFile, from: number, max: number): Uint8Array {
  return (
    withJobFile(f, (fd, size) => {
      if (size <= from) return new Uint8Array();
      const buf = new Uint8Array(Math.min(size - from, max));
      const n = readSync(fd, buf, 0, buf.byteLength, from);
      return buf.subarray(0, Math.max(0, n));
    }) ?? new Uint8Array()
  );
}

/** The wrapper's own log in a pod folder (docs/logs.md#the-wrappers-log). */
export const WRAPPER_LOG = "podstate/wrapper.log";
/**
 * How much of the wrapper's log a deleted pod keeps: its end, from the start of a line. A
 * wrapper logs a few lines per state change and per failed probe, so this holds the whole log of
 * all but a long-flapping pod, and bounds what a day of tombstones can take on disk.
 */
export const KEPT_LOG_MAX = 1024 * 1024;

/** The last `max` bytes of a job file, from the start of a line when cut; undefined when it does not exist. */
function readJobFileTail(f: JobFile, max: number): Uint8Array | undefined {
  return withJobFile(f, (fd, size) => {
    const from = Math.max(0, size - max);
    const buf = new Uint8Array(size - from);
    let got = 0;
    while (got < buf.byteLength) {
      const n = readSync(fd, buf, got, buf.byteLength - got, from + got);
      if (n <= 0) break;
      got += n;
    }
    const bytes = buf.subarray(0, got);
    const nl = from > 0 ? bytes.indexOf(0x0a) : -1;
    return nl >= 0 ? bytes.subarray(nl + 1) : bytes;
  });
}

/**
 * Removes a deleted pod's folder, keeping only the end of its wrapper log, at its place, for as
 * long as the pod's tombstone lives (docs/logs.md#the-wrappers-log). The job could have left
 * anything there, so the log is read through openJobFile's checked descriptor (no symlink, hard
 * link, FIFO or path leading out) before the folder goes, and its bytes are then written into a
 * file and folders the sidecar creates afresh, exclusively: nothing the job made survives the
 * delete, not even the file itself. Returns why the log was not kept, when there was one.
 */
export function removePodDirKeepingLog(dir: string, secrets: readonly string[] = []): { kept: boolean; problem?: string } {
  let bytes: Uint8Array | undefined;
  let problem: string | undefined;
  try {
    bytes = readJobFileTail({ dir, rel: WRAPPER_LOG }, KEPT_LOG_MAX);
  } catch (err) {
    // Whatever the log is, the folder (and its secrets) must still go.
    problem = errorText(err);
  }
  removePodDir(dir, secrets);
  if (bytes === undefined) return { kept: false, problem };
  try {
    mkdirSync(dir, { mode: 0o700 });
    mkdirSync(join(dir, dirname(WRAPPER_LOG)), { mode: 0o700 });
    const fd = openSync(join(dir, WRAPPER_LOG), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      // O_NOFOLLOW guards the last part only: a job still writing over a shared filesystem could
      // have put a link where podstate/ was made a moment ago. The file is judged by where it is.
      const want = join(realpathSync(dirname(dir)), basename(dir), WRAPPER_LOG);
      const real = readlinkSync(`/proc/self/fd/${fd}`);
      if (real !== want) {
        rmSync(real, { force: true });
        throw new UnsafeJobFile(`${WRAPPER_LOG} was created at ${JSON.stringify(real)}, outside the pod folder`);
      }
      for (let off = 0; off < bytes.byteLength;) off += writeSync(fd, bytes, off, bytes.byteLength - off);
    } finally {
      closeSync(fd);
    }
    return { kept: true };
  } catch (err) {
    removePodDir(dir);
    return { kept: false, problem: `Cannot keep ${JSON.stringify(join(dir, WRAPPER_LOG))}: ${errorText(err)}` };
  }
}

/**
 * Whether a pod folder holds nothing but the wrapper log kept after its pod's delete: a folder
 * of a pod still known always holds its wrapper (job.sh) as well.
 */
export function holdsOnlyKeptLog(dir: string): boolean {
  try {
    const top = readdirSync(dir, { withFileTypes: true });
    if (top.length !== 1 || top[0]!.name !== dirname(WRAPPER_LOG) || !top[0]!.isDirectory()) return false;
    const inner = readdirSync(join(dir, dirname(WRAPPER_LOG)), { withFileTypes: true });
    return inner.length === 1 && inner[0]!.name === basename(WRAPPER_LOG) && inner[0]!.isFile();
  } catch {
    return false;
  }
}

/** A state file is one short line; more is not a state file. */
const STATE_FILE_MAX = 4096;

/**
 * The state lines that came back with the job's output (`podstate/<key>`). A state file that is
 * not a plain file of the pod folder is skipped with a warning (`onUnsafe`): the chirped line
 * or the job's exit code then stand for the container.
 */
export function readStateFiles(dir: string, keys: readonly string[], onUnsafe?: (err: UnsafeJobFile) => void): Map<string, StateLine> {
  const out = new Map<string, StateLine>();
  for (const k of keys) {
    let bytes: Uint8Array;
    try {
      bytes = readJobFile({ dir, rel: `podstate/${k}` }, 0, STATE_FILE_MAX);
    } catch (err) {
      if (!(err instanceof UnsafeJobFile)) throw err;
      onUnsafe?.(err);
      continue;
    }
    const line = parseStateLine(new TextDecoder().decode(bytes));
    if (line) out.set(k, line);
  }
  return out;
}

/** Whether a folder exists (the folder itself, not what a symlink there points at). */
export function isDir(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}
