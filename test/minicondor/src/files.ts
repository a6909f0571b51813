// File transfer as HTCondor's FileTransfer object does it (docs/htcondor.md#submit-file-rules transfer_input_files /
// transfer_output_files).
//
// What a symbolic link in a transferred tree becomes (src/condor_utils/file_transfer.cpp of htcondor/htcondor,
// FileTransfer::ExpandFileTransferList and FileTransfer::DoUpload; src/condor_utils/directory.cpp Directory::Next;
// src/condor_io/reli_sock.cpp ReliSock::put_file; docs/man-pages/htcondor-jdl.rst, transfer_output_files:
// "Symbolic links to files are transferred as the files they point to. Transfer of symbolic links to
// directories is not currently supported."):
// - a link to a file, named in the list or found in a transferred directory, is sent as a regular file with
//   the content of its target, wherever the target is (put_file opens with safe_open_wrapper_follow): no link
//   is ever created on the receiving side;
// - a link to a directory (without a trailing `/` when named in the list) is not followed: DoUpload sends an
//   empty file under its name and fails the transfer, "reading from file <path>: (errno 21) Is a directory-
//   Transfer of symlinks to directories is not supported.", after sending everything else;
// - a dangling link inside a transferred directory is skipped silently (Directory::Next drops entries whose
//   stat() fails); named in the list it takes the path of a missing file (lstat succeeds, stat fails, and
//   put_file's open fails with ENOENT), which 25.x did not hold on
//   (docs/htcondor.md#output-transfer-of-folders-and-missing-files);
// - the receiver opens every destination file following symlinks (ReliSock::get_file, safe_open_wrapper_follow,
//   O_CREAT|O_TRUNC): a link already present at the destination is written through.
import * as fs from "node:fs";
import * as path from "node:path";

export type XferItem =
  | { kind: "file"; src: string; dest: string }
  | { kind: "dir"; dest: string }
  | { kind: "symlinkdir"; src: string; dest: string }
  | { kind: "missing"; src: string; dest: string };

/**
 * FileTransfer::ExpandFileTransferList for one listed name: `full` is where it is on the sending side,
 * `destDir` where it goes, relative to the receiving root ("" for the root itself).
 */
export function expandTransfer(name: string, full: string, destDir: string, out: XferItem[]): void {
  const trailing = name.endsWith("/");
  const dest = (n: string) => (destDir ? path.join(destDir, n) : n);
  const base = path.basename(name);
  let lst: fs.Stats;
  try {
    lst = fs.lstatSync(full);
  } catch {
    out.push({ kind: "missing", src: full, dest: dest(base) });
    return;
  }
  let st = lst;
  if (lst.isSymbolicLink()) {
    try {
      st = fs.statSync(full);
    } catch {
      out.push({ kind: "missing", src: full, dest: dest(base) });
      return;
    }
  }
  // sockets and FIFOs are left out, not an error
  if (st.isSocket() || st.isFIFO()) return;
  if (!st.isDirectory()) {
    out.push({ kind: "file", src: full, dest: dest(base) });
    return;
  }
  if (lst.isSymbolicLink() && !trailing) {
    out.push({ kind: "symlinkdir", src: full, dest: dest(base) });
    return;
  }
  let destination = destDir;
  if (!trailing) {
    destination = dest(base);
    out.push({ kind: "dir", dest: destination });
  }
  let entries: string[];
  try {
    entries = fs.readdirSync(full);
  } catch {
    return;
  }
  for (const e of entries.sort()) {
    const p = path.join(full, e);
    try {
      fs.statSync(p);
    } catch {
      continue;
    } // Directory::Next: a dangling link is not even listed
    expandTransfer(`${name.replace(/\/+$/, "")}/${e}`, p, destination, out);
  }
}

export type XferFailure = { errno: number; detail: string };

const ERRNO: Record<string, [number, string]> = {
  ENOENT: [2, "No such file or directory"],
  EACCES: [13, "Permission denied"],
  EISDIR: [21, "Is a directory"],
  ENOTDIR: [20, "Not a directory"],
  ELOOP: [40, "Too many levels of symbolic links"],
  EPERM: [1, "Operation not permitted"],
};

/**
 * Sends the items into `root` as DoUpload/DoDownload do: every item is tried, the first failure is kept.
 * `missing` items are left to the caller: `skipMissing` drops them (output in 25.x), otherwise they fail.
 * `rename` maps a destination (relative to `root`) to another absolute path (transfer_output_remaps).
 */
export function sendItems(items: XferItem[], root: string, opts: { skipMissing: boolean; rename?: (dest: string) => string | undefined }): XferFailure | null {
  let failure: XferFailure | null = null;
  const fail = (src: string, code: string | undefined, extra = "") => {
    const [n, text] = ERRNO[code ?? ""] ?? [5, "Input/output error"];
    failure ??= { errno: n, detail: `reading from file ${src}: (errno ${n}) ${text}${extra}` };
  };
  const where = (dest: string) => opts.rename?.(dest) ?? path.join(root, dest);
  for (const it of items) {
    const dst = where(it.dest);
    if (it.kind === "dir") {
      fs.mkdirSync(dst, { recursive: true });
      continue;
    }
    if (it.kind === "missing") {
      if (!opts.skipMissing) fail(it.src, "ENOENT");
      continue;
    }
    fs.mkdirSync(path.dirname(dst), { recursive: true });
    if (it.kind === "symlinkdir") {
      // put_file(NULL_FILE): the receiver gets an empty file under the link's name
      try {
        fs.writeFileSync(dst, "");
      } catch { /* the receiver's own failure */ }
      fail(it.src, "EISDIR", "- Transfer of symlinks to directories is not supported.");
      continue;
    }
    let data: Buffer;
    let mode = 0o644;
    try {
      const fd = fs.openSync(it.src, "r");
      try {
        mode = fs.fstatSync(fd).mode & 0o7777;
        data = fs.readFileSync(fd);
      } finally {
        fs.closeSync(fd);
      }
    } catch (e) {
      try {
        fs.writeFileSync(dst, "");
      } catch { /* ignore */ }
      fail(it.src, (e as NodeJS.ErrnoException).code);
      continue;
    }
    try {
      fs.writeFileSync(dst, data);
      fs.chmodSync(dst, mode);
    } catch { /* the receiver's own failure */ }
  }
  return failure;
}

/** Copy src into destDir: a file by basename; a directory as itself, or (contentsOnly) its contents. Throws on a failure. */
export function copyInto(src: string, destDir: string, contentsOnly = false): void {
  const items: XferItem[] = [];
  expandTransfer(contentsOnly ? src.replace(/\/*$/, "/") : src.replace(/\/+$/, ""), src, "", items);
  fs.mkdirSync(destDir, { recursive: true });
  const f = sendItems(items, destDir, { skipMissing: false });
  if (f) throw Object.assign(new Error(f.detail), { failure: f });
}

/** Copy src (file or directory) to the path dst. Throws on a failure. */
export function copyTo(src: string, dst: string): void {
  const items: XferItem[] = [];
  const name = path.basename(src);
  expandTransfer(name, src, "", items);
  const f = sendItems(items, path.dirname(dst), {
    skipMissing: false,
    rename: (d) => (d === name ? dst : d.startsWith(name + "/") ? path.join(dst, d.slice(name.length + 1)) : undefined),
  });
  if (f) throw Object.assign(new Error(f.detail), { failure: f });
}

export type Snapshot = Record<string, string>;
export function snapshot(dir: string): Snapshot {
  const s: Snapshot = {};
  try {
    for (const e of fs.readdirSync(dir)) {
      try {
        const st = fs.statSync(path.join(dir, e));
        s[e] = `${st.isDirectory() ? "d" : "f"}:${st.mtimeMs}:${st.size}`;
      } catch { /* ignore */ }
    }
  } catch { /* ignore */ }
  return s;
}

/** "a=b;c=d" remaps → map */
export function parseRemaps(s: string | undefined): Map<string, string> {
  const m = new Map<string, string>();
  if (!s) return m;
  for (const part of s.split(";")) {
    const i = part.indexOf("=");
    if (i > 0) m.set(part.slice(0, i).trim(), part.slice(i + 1).trim());
  }
  return m;
}
