/**
 * The pod folders under DataRootFolder: `pods/<uid>/` holds the wrapper, the submit file, the
 * env files and volume data that ship with the job, and the output that comes back.
 * Folders are 0700; secret files 0600 and removed first.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, openSync, readSync, closeSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import type { PodFile } from "../core/types.ts";
import { parseStateLine, type StateLine } from "../core/state-line.ts";

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

/** Removes the secret files first (so a failure half-way never leaves secrets behind), then the folder. */
export function removePodDir(dir: string, secrets: readonly string[] = []): void {
  for (const p of secrets) rmSync(join(dir, p), { force: true });
  rmSync(dir, { recursive: true, force: true });
}

export function removeFiles(dir: string, paths: readonly string[]): void {
  for (const p of paths) rmSync(join(dir, p), { force: true });
}

/** The state lines that came back with the job's output (`podstate/<key>`). */
export function readStateFiles(dir: string, keys: readonly string[]): Map<string, StateLine> {
  const out = new Map<string, StateLine>();
  for (const k of keys) {
    const p = join(dir, "podstate", k);
    if (!existsSync(p)) continue;
    const line = parseStateLine(readFileSync(p, "utf8"));
    if (line) out.set(k, line);
  }
  return out;
}

export function fileSize(path: string): number | undefined {
  try {
    return statSync(path).size;
  } catch {
    return undefined;
  }
}

/** Reads bytes [from, from+max) of a file (log follow reads what was appended). */
export function readRange(path: string, from: number, max: number): Uint8Array {
  const size = fileSize(path) ?? 0;
  if (size <= from) return new Uint8Array();
  const len = Math.min(size - from, max);
  const buf = new Uint8Array(len);
  const fd = openSync(path, "r");
  try {
    const n = readSync(fd, buf, 0, len, from);
    return buf.subarray(0, Math.max(0, n));
  } finally {
    closeSync(fd);
  }
}
