// File-transfer helpers (spec §1.4 transfer_input_files / transfer_output_files).
import * as fs from "node:fs";
import * as path from "node:path";

/** Copy src into destDir: a file by basename; a directory as itself, or (contentsOnly) its contents. */
export function copyInto(src: string, destDir: string, contentsOnly = false): void {
  const st = fs.statSync(src);
  fs.mkdirSync(destDir, { recursive: true });
  if (st.isDirectory()) {
    if (contentsOnly) {
      for (const e of fs.readdirSync(src)) fs.cpSync(path.join(src, e), path.join(destDir, e), { recursive: true, force: true });
    } else fs.cpSync(src, path.join(destDir, path.basename(src)), { recursive: true, force: true });
  } else {
    const dst = path.join(destDir, path.basename(src));
    fs.copyFileSync(src, dst);
    try { fs.chmodSync(dst, st.mode & 0o7777); } catch { /* ignore */ }
  }
}

export function copyTo(src: string, dst: string): void {
  const st = fs.statSync(src);
  fs.mkdirSync(path.dirname(dst), { recursive: true });
  if (st.isDirectory()) fs.cpSync(src, dst, { recursive: true, force: true });
  else {
    fs.copyFileSync(src, dst);
    try { fs.chmodSync(dst, st.mode & 0o7777); } catch { /* ignore */ }
  }
}

export type Snapshot = Record<string, string>;
export function snapshot(dir: string): Snapshot {
  const s: Snapshot = {};
  try {
    for (const e of fs.readdirSync(dir)) {
      try { const st = fs.statSync(path.join(dir, e)); s[e] = `${st.isDirectory() ? "d" : "f"}:${st.mtimeMs}:${st.size}`; } catch { /* ignore */ }
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
