/**
 * The credential files the condor tools read: what the ping checks of them (core/credentials.ts
 * judges it), and the private token directory that holds a --token-file's copy
 * (docs/htcondor.md#idtokens-a-token-directory).
 */
import { chmodSync, closeSync, fchmodSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { CredentialRead, CredentialSource } from "../core/credentials.ts";
import type { TokenDirEntry } from "../core/idtokens.ts";
import { errorText } from "../core/errors.ts";

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/** The text of a file, or why it cannot be read when it is there (undefined `unreadable`: it is not there). */
function readFile(path: string): { text?: string; unreadable?: string } {
  try {
    return { text: readFileSync(path, "utf8") };
  } catch (err) {
    const code = err instanceof Error && "code" in err ? String((err as { code: unknown }).code) : undefined;
    return code === "ENOENT" || code === "ENOTDIR" ? {} : { unreadable: code === "EISDIR" ? "EISDIR: a directory" : (code ?? String(err)) };
  }
}

/** Reads what core/credentials.ts needs to judge a credential; `uid` is the tools' user. */
export function readCredential(source: CredentialSource, uid: number): CredentialRead {
  if (source.kind !== "idtoken-dir") {
    const { text, unreadable } = readFile(source.path);
    return unreadable === undefined ? { kind: "file", text } : { kind: "file", text, unreadable };
  }
  let names: string[];
  try {
    names = readdirSync(source.path);
  } catch {
    return { kind: "dir", uid, entries: undefined };
  }
  const entries: TokenDirEntry[] = names.map((name) => {
    const path = join(source.path, name);
    try {
      // stat, not lstat: HTCondor opens the files through their links (safe_fopen_wrapper_follow).
      const st = statSync(path);
      if (st.isDirectory()) return { name, directory: true };
      return { name, directory: false, uid: st.uid, mode: st.mode, text: readText(path) };
    } catch {
      return { name, directory: false };
    }
  });
  return { kind: "dir", uid, entries };
}

/** The name of the copy in the private token directory (not one HTCondor skips). */
const TOKEN_COPY_NAME = "token";

/**
 * Keeps `dir/token` a copy of `from`, owned by this process's user, mode 0600, in `dir`, mode
 * 0700: HTCondor reads IDTOKENS from a directory only, and only files of its own user that nobody
 * else may read (read_secure_file), which a Kubernetes Secret's files are not. The returned
 * function runs before every tool: it copies again when the file changed (a renewed Secret is a
 * new file behind the same name), and removes the copy while the file is missing, so that the
 * tools never authenticate with a token the site took away. It throws when the copy cannot be
 * made; the text names paths, never the token.
 */
export function tokenCopier(copy: { from: string; dir: string }): () => void {
  const target = join(copy.dir, TOKEN_COPY_NAME);
  // A dot name: findTokens skips it (LOCAL_CONFIG_DIR_EXCLUDE_REGEXP), so a half-written copy is never read.
  const temp = join(copy.dir, `.${TOKEN_COPY_NAME}.new`);
  let copied: string | undefined;

  function privateDir(): void {
    mkdirSync(copy.dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(copy.dir);
    if (!st.isDirectory()) throw new Error(`${copy.dir} is not a directory`);
    if ((st.mode & 0o777) !== 0o700) chmodSync(copy.dir, 0o700);
  }

  return () => {
    let st;
    try {
      st = statSync(copy.from);
    } catch {
      rmSync(target, { force: true });
      copied = undefined;
      return;
    }
    const stamp = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
    if (stamp === copied && lstatExists(target)) return;
    try {
      privateDir();
      const text = readFileSync(copy.from);
      rmSync(temp, { force: true });
      const fd = openSync(temp, "wx", 0o600);
      try {
        fchmodSync(fd, 0o600);
        writeSync(fd, text);
      } finally {
        closeSync(fd);
      }
      renameSync(temp, target);
      copied = stamp;
    } catch (err) {
      const why = err instanceof Error && "code" in err ? String((err as { code: unknown }).code) : errorText(err);
      // Reading the file is the sidecar's side of the copy; say which side failed.
      if (!readable(copy.from)) throw new Error(`cannot read the IDTOKEN file ${copy.from} (${why}) to copy it into ${copy.dir}`);
      throw new Error(`cannot copy the IDTOKEN file ${copy.from} into ${copy.dir}: ${why}`);
    }
  };
}

function readable(path: string): boolean {
  try {
    readFileSync(path);
    return true;
  } catch {
    return false;
  }
}

function lstatExists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}
